//! Request → the (resource, actions) pairs authorization checks, as the reference's
//! `DefaultAuthorizationContextBuilder` derives them: by hand for the client codes, from
//! each request header's `@RocketMQAction` / `@RocketMQResource` annotations for the rest.
//!
//! The annotations, as 5.3.3 declares them, for the codes Stratus serves or may serve
//! (`ANNOTATED`): a code whose header annotates fields gets one pair per non-empty field (a
//! `%RETRY%` topic becomes its group); a CLUSTER code without such fields gets
//! `Cluster:<cluster name>`; a code with neither (TOPIC LIST of 21 and 224, GROUP GET of 201)
//! and a code without a header class (200, 28, 46, 106, 206, 361, …) gets no pair: it is
//! only authenticated.

use stratus_compat::RequestCode;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::heartbeat::{HeartbeatData, decode_json_body};
use stratus_compat::request::lock::LockBatchRequestBody;

use super::model::{Action, Resource, ResourceType, is_retry_topic};

/// What one request asks for.
pub(crate) type Needs = Vec<(Resource, Vec<Action>)>;

/// Where an annotated code's resources come from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// `resource = CLUSTER`: the cluster.
    Cluster,
    /// `@RocketMQResource` fields: (ext field, type, splitter).
    Fields(&'static [(&'static str, ResourceType, Option<char>)]),
    /// Neither: nothing to check.
    Nothing,
}

const TOPIC: (&str, ResourceType, Option<char>) = ("topic", ResourceType::Topic, None);

/// `(code, where from, actions)` of the header classes' annotations.
const ANNOTATED: &[(RequestCode, Source, &[Action])] = {
    use Action::*;
    use RequestCode as C;
    use ResourceType::Group as G;
    use Source::{Cluster, Fields, Nothing};
    &[
        (C::UpdateAndCreateTopic, Fields(&[TOPIC]), &[Create]),
        (C::GetAllTopicConfig, Nothing, &[List]),
        (C::SearchOffsetByTimestamp, Fields(&[TOPIC]), &[Get]),
        (C::GetMaxOffset, Fields(&[TOPIC]), &[Get]),
        (C::GetMinOffset, Fields(&[TOPIC]), &[Get]),
        (C::GetEarliestMsgStoretime, Fields(&[TOPIC]), &[Get]),
        (C::ViewMessageById, Fields(&[TOPIC]), &[Get]),
        (C::PutKvConfig, Cluster, &[Update]),
        (C::GetKvConfig, Cluster, &[Get]),
        (C::DeleteKvConfig, Cluster, &[Update]),
        (C::GetAllSubscriptionGroupConfig, Nothing, &[Get]),
        (C::GetTopicStatsInfo, Fields(&[TOPIC]), &[Get]),
        (
            C::GetConsumerConnectionList,
            Fields(&[("consumerGroup", G, None)]),
            &[Get],
        ),
        (C::GetProducerConnectionList, Cluster, &[Get]),
        (C::WipeWritePermOfBroker, Cluster, &[Update]),
        (
            C::DeleteSubscriptionGroup,
            Fields(&[("groupName", G, None)]),
            &[Delete],
        ),
        (
            C::GetConsumeStats,
            Fields(&[
                ("consumerGroup", G, None),
                TOPIC,
                ("topicList", ResourceType::Topic, Some(';')),
            ]),
            &[Get],
        ),
        (C::DeleteTopicInBroker, Fields(&[TOPIC]), &[Delete]),
        (C::DeleteTopicInNamesrv, Cluster, &[Update]),
        (C::GetKvlistByNamespace, Cluster, &[Get]),
        (
            C::InvokeBrokerToResetOffset,
            Fields(&[("group", G, None), TOPIC]),
            &[Update],
        ),
        (
            C::InvokeBrokerToGetConsumerStatus,
            Fields(&[TOPIC, ("group", G, None)]),
            &[Get],
        ),
        (C::GetTopicsByCluster, Nothing, &[List]),
        (C::QueryTopicConsumeByWho, Fields(&[TOPIC]), &[Get]),
        (
            C::GetConsumerRunningInfo,
            Fields(&[("consumerGroup", G, None)]),
            &[Get],
        ),
        (
            C::ConsumeMessageDirectly,
            Fields(&[("consumerGroup", G, None), TOPIC]),
            &[Sub],
        ),
        (
            C::CloneGroupOffset,
            Fields(&[("destGroup", G, None), TOPIC]),
            &[Update],
        ),
        (C::ViewBrokerStatsData, Cluster, &[Get]),
        (C::GetBrokerConsumeStats, Cluster, &[Get]),
        (C::AddWritePermOfBroker, Cluster, &[Update]),
        (C::GetAllProducerInfo, Cluster, &[Get]),
        (
            C::QueryTopicsByConsumer,
            Fields(&[("group", G, None)]),
            &[Get],
        ),
        (C::GetTopicConfig, Fields(&[TOPIC]), &[Get]),
        (
            C::GetSubscriptionGroupConfig,
            Fields(&[("group", G, None)]),
            &[Get],
        ),
        (C::AuthCreateUser, Cluster, &[Update]),
        (C::AuthUpdateUser, Cluster, &[Update]),
        (C::AuthDeleteUser, Cluster, &[Update]),
        (C::AuthGetUser, Cluster, &[Get]),
        (C::AuthListUser, Cluster, &[Get]),
        (C::AuthCreateAcl, Cluster, &[Update]),
        (C::AuthUpdateAcl, Cluster, &[Update]),
        (C::AuthDeleteAcl, Cluster, &[Update]),
        (C::AuthGetAcl, Cluster, &[Get]),
        (C::AuthListAcl, Cluster, &[Get]),
    ]
};

fn field<'a>(cmd: &'a RemotingCommand, key: &str) -> &'a str {
    cmd.ext_fields.get(key).map_or("", String::as_str)
}

fn non_blank<'a>(cmd: &'a RemotingCommand, key: &str) -> Option<&'a str> {
    cmd.ext_fields
        .get(key)
        .map(String::as_str)
        .filter(|v| !v.trim().is_empty())
}

/// What `cmd` asks for. A request without ext fields asks nothing (as the reference).
///
/// # Errors
/// A body the pairs come from does not parse: "parse authorization context error.".
pub(crate) fn needs(cmd: &RemotingCommand, cluster: &str) -> Result<Needs, String> {
    use Action::*;
    use RequestCode as C;
    let mut out: Needs = Vec::new();
    if cmd.ext_fields.is_empty() {
        return Ok(out);
    }
    let parse_error = |_| "parse authorization context error.".to_owned();
    let code = RequestCode::from_i32(cmd.code);
    match code {
        C::GetRouteinfoByTopic => {
            let topic = field(cmd, "topic");
            if is_retry_topic(topic) {
                out.push((Resource::group(topic), vec![Sub, Get]));
            } else {
                out.push((Resource::topic(topic), vec![Pub, Sub, Get]));
            }
        }
        C::SendMessage | C::SendMessageV2 | C::SendBatchMessage => {
            let (topic_key, group_key) = if code == C::SendMessage {
                ("topic", "group")
            } else {
                ("b", "a")
            };
            let topic = field(cmd, topic_key);
            if is_retry_topic(topic) {
                let group = non_blank(cmd, group_key).unwrap_or(topic);
                out.push((Resource::group(group), vec![Sub]));
            } else {
                out.push((Resource::topic(topic), vec![Pub]));
            }
        }
        C::EndTransaction => {
            if let Some(topic) = non_blank(cmd, "topic") {
                out.push((Resource::topic(topic), vec![Pub]));
            }
        }
        C::ConsumerSendMsgBack => out.push((Resource::group(field(cmd, "group")), vec![Sub])),
        C::PullMessage => {
            let topic = field(cmd, "topic");
            if !is_retry_topic(topic) {
                out.push((Resource::topic(topic), vec![Sub]));
            }
            out.push((Resource::group(field(cmd, "consumerGroup")), vec![Sub]));
        }
        C::QueryMessage => out.push((Resource::topic(field(cmd, "topic")), vec![Sub, Get])),
        C::HeartBeat => {
            let data: HeartbeatData = decode_json_body(&cmd.body).map_err(parse_error)?;
            for c in &data.consumer_data_set {
                out.push((Resource::group(&c.group_name), vec![Sub]));
                for s in &c.subscription_data_set {
                    if !is_retry_topic(&s.topic) {
                        out.push((Resource::topic(&s.topic), vec![Sub]));
                    }
                }
            }
        }
        C::UnregisterClient => {
            if let Some(group) = non_blank(cmd, "consumerGroup") {
                out.push((Resource::group(group), vec![Sub]));
            }
        }
        C::GetConsumerListByGroup => {
            out.push((Resource::group(field(cmd, "consumerGroup")), vec![Sub, Get]));
        }
        C::QueryConsumerOffset | C::UpdateConsumerOffset => {
            let act = if code == C::QueryConsumerOffset {
                Get
            } else {
                Update
            };
            let topic = field(cmd, "topic");
            if !is_retry_topic(topic) {
                out.push((Resource::topic(topic), vec![Sub, act]));
            }
            out.push((Resource::group(field(cmd, "consumerGroup")), vec![Sub, act]));
        }
        C::LockBatchMq | C::UnlockBatchMq => {
            let body: LockBatchRequestBody = decode_json_body(&cmd.body).map_err(parse_error)?;
            out.push((Resource::group(&body.consumer_group), vec![Sub]));
            for mq in &body.mq_set {
                if !is_retry_topic(&mq.topic) {
                    out.push((Resource::topic(&mq.topic), vec![Sub]));
                }
            }
        }
        _ => annotated(cmd, code, cluster, &mut out),
    }
    Ok(out)
}

fn annotated(cmd: &RemotingCommand, code: RequestCode, cluster: &str, out: &mut Needs) {
    let Some((_, from, actions)) = ANNOTATED.iter().find(|(c, _, _)| *c == code) else {
        return;
    };
    match from {
        Source::Nothing => {}
        Source::Cluster => out.push((Resource::cluster(cluster), actions.to_vec())),
        Source::Fields(fields) => {
            for (key, kind, splitter) in *fields {
                let Some(value) = cmd.ext_fields.get(*key) else {
                    continue;
                };
                let values: Vec<&str> = match splitter {
                    Some(c) => value.split(*c).filter(|v| !v.is_empty()).collect(),
                    None => vec![value.as_str()],
                };
                for v in values {
                    let resource = if *kind == ResourceType::Topic && is_retry_topic(v) {
                        Resource::group(v)
                    } else {
                        Resource::literal(*kind, v)
                    };
                    out.push((resource, actions.to_vec()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(code: RequestCode, fields: &[(&str, &str)], body: &str) -> RemotingCommand {
        let mut c = RemotingCommand::request(code.to_i32(), 0).with_body(body.as_bytes().to_vec());
        c.put_ext("AccessKey", "u");
        for (k, v) in fields {
            c.put_ext(k, v);
        }
        c
    }

    fn keys(n: &Needs) -> Vec<(String, Vec<&'static str>)> {
        n.iter()
            .map(|(r, a)| (r.key(), a.iter().map(|a| a.name()).collect()))
            .collect()
    }

    fn of(
        code: RequestCode,
        fields: &[(&str, &str)],
        body: &str,
    ) -> Vec<(String, Vec<&'static str>)> {
        keys(&needs(&cmd(code, fields, body), "DefaultCluster").expect("needs"))
    }

    fn k(key: &str, actions: &[&'static str]) -> (String, Vec<&'static str>) {
        (key.to_owned(), actions.to_vec())
    }

    use RequestCode as C;

    #[test]
    fn routes_and_sends() {
        assert_eq!(
            of(C::GetRouteinfoByTopic, &[("topic", "T")], ""),
            [k("Topic:T", &["Pub", "Sub", "Get"])]
        );
        assert_eq!(
            of(C::GetRouteinfoByTopic, &[("topic", "%RETRY%g")], ""),
            [k("Group:g", &["Sub", "Get"])]
        );
        assert_eq!(
            of(C::SendMessage, &[("topic", "T")], ""),
            [k("Topic:T", &["Pub"])]
        );
        assert_eq!(
            of(C::SendMessage, &[("topic", "%RETRY%g")], ""),
            [k("Group:g", &["Sub"])]
        );
        assert_eq!(
            of(C::SendMessageV2, &[("b", "T"), ("a", "pg")], ""),
            [k("Topic:T", &["Pub"])]
        );
        assert_eq!(
            of(C::SendBatchMessage, &[("b", "%RETRY%g"), ("a", "cg")], ""),
            [k("Group:cg", &["Sub"])]
        );
        assert_eq!(
            of(C::EndTransaction, &[("topic", "T")], ""),
            [k("Topic:T", &["Pub"])]
        );
        assert!(of(C::EndTransaction, &[], "").is_empty());
    }

    #[test]
    fn consumer_codes() {
        assert_eq!(
            of(C::ConsumerSendMsgBack, &[("group", "g")], ""),
            [k("Group:g", &["Sub"])]
        );
        assert_eq!(
            of(
                C::PullMessage,
                &[("topic", "T"), ("consumerGroup", "g")],
                ""
            ),
            [k("Topic:T", &["Sub"]), k("Group:g", &["Sub"])]
        );
        assert_eq!(
            of(
                C::PullMessage,
                &[("topic", "%RETRY%g"), ("consumerGroup", "g")],
                ""
            ),
            [k("Group:g", &["Sub"])]
        );
        assert_eq!(
            of(C::QueryMessage, &[("topic", "T")], ""),
            [k("Topic:T", &["Sub", "Get"])]
        );
        assert_eq!(
            of(C::UnregisterClient, &[("consumerGroup", "g")], ""),
            [k("Group:g", &["Sub"])]
        );
        assert!(of(C::UnregisterClient, &[("producerGroup", "p")], "").is_empty());
        assert_eq!(
            of(C::GetConsumerListByGroup, &[("consumerGroup", "g")], ""),
            [k("Group:g", &["Sub", "Get"])]
        );
        assert_eq!(
            of(
                C::QueryConsumerOffset,
                &[("topic", "T"), ("consumerGroup", "g")],
                ""
            ),
            [k("Topic:T", &["Sub", "Get"]), k("Group:g", &["Sub", "Get"])]
        );
        assert_eq!(
            of(
                C::UpdateConsumerOffset,
                &[("topic", "%RETRY%g"), ("consumerGroup", "g")],
                ""
            ),
            [k("Group:g", &["Sub", "Update"])]
        );
    }

    #[test]
    fn bodies_heartbeat_and_locks() {
        let hb = r#"{"clientID":"c","consumerDataSet":[{"groupName":"g","consumeType":"CONSUME_PASSIVELY",
            "messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","unitMode":false,
            "subscriptionDataSet":[{"topic":"T","subString":"*","tagsSet":[],"codeSet":[],"subVersion":0},
            {"topic":"%RETRY%g","subString":"*","tagsSet":[],"codeSet":[],"subVersion":0}]}],"producerDataSet":[]}"#;
        assert_eq!(
            of(C::HeartBeat, &[], hb),
            [k("Group:g", &["Sub"]), k("Topic:T", &["Sub"])]
        );
        let lock = r#"{"consumerGroup":"g","clientId":"c","onlyThisBroker":false,
            "mqSet":[{"topic":"T","brokerName":"b","queueId":0},{"topic":"%RETRY%g","brokerName":"b","queueId":0}]}"#;
        assert_eq!(
            of(C::LockBatchMq, &[], lock),
            [k("Group:g", &["Sub"]), k("Topic:T", &["Sub"])]
        );
        assert_eq!(of(C::UnlockBatchMq, &[], lock).len(), 2);
        let err = needs(&cmd(C::HeartBeat, &[], "{not json"), "c").unwrap_err();
        assert_eq!(err, "parse authorization context error.");
    }

    #[test]
    fn annotated_topic_group_and_cluster_codes() {
        assert_eq!(
            of(C::UpdateAndCreateTopic, &[("topic", "T")], ""),
            [k("Topic:T", &["Create"])]
        );
        assert_eq!(
            of(C::DeleteTopicInBroker, &[("topic", "T")], ""),
            [k("Topic:T", &["Delete"])]
        );
        assert_eq!(
            of(C::GetMaxOffset, &[("topic", "%RETRY%g")], ""),
            [k("Group:g", &["Get"])]
        );
        assert_eq!(
            of(C::DeleteSubscriptionGroup, &[("groupName", "g")], ""),
            [k("Group:g", &["Delete"])]
        );
        assert_eq!(
            of(
                C::GetConsumeStats,
                &[("consumerGroup", "g"), ("topicList", "A;B")],
                ""
            ),
            [
                k("Group:g", &["Get"]),
                k("Topic:A", &["Get"]),
                k("Topic:B", &["Get"])
            ]
        );
        assert_eq!(
            of(
                C::CloneGroupOffset,
                &[("destGroup", "d"), ("srcGroup", "s"), ("topic", "T")],
                ""
            ),
            [k("Group:d", &["Update"]), k("Topic:T", &["Update"])]
        );
        assert_eq!(
            of(C::ConsumeMessageDirectly, &[("consumerGroup", "g")], ""),
            [k("Group:g", &["Sub"])]
        );
        assert_eq!(
            of(C::DeleteTopicInNamesrv, &[("topic", "T")], ""),
            [k("Cluster:DefaultCluster", &["Update"])]
        );
        assert_eq!(
            of(C::PutKvConfig, &[("namespace", "n")], ""),
            [k("Cluster:DefaultCluster", &["Update"])]
        );
        assert_eq!(
            of(C::GetKvConfig, &[("namespace", "n")], ""),
            [k("Cluster:DefaultCluster", &["Get"])]
        );
        assert_eq!(
            of(C::GetProducerConnectionList, &[("producerGroup", "p")], ""),
            [k("Cluster:DefaultCluster", &["Get"])]
        );
    }

    #[test]
    fn auth_admin_codes_need_the_cluster() {
        for code in [
            C::AuthCreateUser,
            C::AuthUpdateUser,
            C::AuthDeleteUser,
            C::AuthCreateAcl,
            C::AuthUpdateAcl,
            C::AuthDeleteAcl,
        ] {
            assert_eq!(
                of(code, &[("username", "x")], ""),
                [k("Cluster:DefaultCluster", &["Update"])],
                "{code}"
            );
        }
        for code in [
            C::AuthGetUser,
            C::AuthListUser,
            C::AuthGetAcl,
            C::AuthListAcl,
        ] {
            assert_eq!(
                of(code, &[], ""),
                [k("Cluster:DefaultCluster", &["Get"])],
                "{code}"
            );
        }
    }

    #[test]
    fn codes_without_resources_are_only_authenticated() {
        for code in [
            C::GetAllTopicConfig,
            C::GetTopicsByCluster,
            C::GetAllSubscriptionGroupConfig,
            C::UpdateAndCreateSubscriptionGroup,
            C::GetBrokerRuntimeInfo,
            C::CheckClientConfig,
            C::GetBrokerClusterInfo,
            C::LitePullMessage,
        ] {
            assert!(of(code, &[("topic", "T")], "").is_empty(), "{code}");
        }
        // No ext fields at all: nothing asked (the reference's early return).
        let bare = RemotingCommand::request(C::PullMessage.to_i32(), 0);
        assert!(needs(&bare, "c").expect("needs").is_empty());
    }
}

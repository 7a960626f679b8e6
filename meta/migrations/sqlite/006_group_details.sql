-- Stratus meta schema, version 6 (SQLite): the rest of a subscription group's config, and
-- finding the groups with offsets on a topic (operators' views).
--
-- Same SQL subset as 001 (see there); nothing here is SQLite-only.

-- The protocol's fields of a group that Stratus does not interpret (a front end's JSON
-- object, kept as given); NULL: the defaults.
ALTER TABLE subscription_groups ADD COLUMN details TEXT;

-- QUERY_TOPIC_CONSUME_BY_WHO: the groups with offsets on a topic of a shard.
CREATE INDEX consumer_offsets_by_topic ON consumer_offsets (topic, shard_id);

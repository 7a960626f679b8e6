-- Stratus meta schema, version 6 (PostgreSQL): the rest of a subscription group's config,
-- and finding the groups with offsets on a topic (see migrations/sqlite/006_group_details.sql).
ALTER TABLE subscription_groups ADD COLUMN details TEXT;

CREATE INDEX consumer_offsets_by_topic ON consumer_offsets (topic, shard_id);

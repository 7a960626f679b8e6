//! Small async client used by tests and the bench tool.

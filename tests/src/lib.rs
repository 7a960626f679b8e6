//! Harness for end-to-end tests: start a `stratus` process, run real clients against it.

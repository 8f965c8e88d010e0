#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("x")]
pub struct ProfileError;

//! Network layer of the RocketMQ front end: the accept loop ([`listener`]), one task pair
//! per connection ([`connection`]), and the [`Channel`] handle through which processors and
//! the registry reach a client (responses and server→client requests). The only place the
//! front end uses `tokio::net`.

pub(crate) mod channel;
pub(crate) mod connection;
pub(crate) mod listener;

pub(crate) use channel::Channel;

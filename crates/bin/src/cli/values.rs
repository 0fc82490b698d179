//! The values of the command line's options: durations, networks and the choices of
//! `serve`.

use std::time::Duration;

use clap::ValueEnum;

/// A positive duration: `500ms`, `10s`, `2m`, `90d`..., or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let duration = match text.trim().parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => humantime::parse_duration(text.trim())
            .map_err(|err| format!("{text:?} is not a duration such as 10s, 5m or 90d: {err}"))?,
    };
    if duration.is_zero() {
        return Err("a duration must be longer than zero".to_owned());
    }
    Ok(duration)
}

/// The header trusted proxies write the client into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ForwardedHeaderName {
    /// `X-Forwarded-For`.
    XForwardedFor,
    /// RFC 7239 `Forwarded`.
    Forwarded,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Where the rate-limit counters are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RateLimiterKind {
    /// moka caches in this process.
    #[value(alias = "memory")]
    Moka,
    /// Redis, shared by several instances.
    Redis,
}

/// What a rate-limit decision does without Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LimiterFailureMode {
    /// Count in this instance until Redis answers again.
    Local,
    /// Admit every request.
    Open,
    /// Answer 503.
    Closed,
}

/// An address or a network: `10.0.0.1` or `10.0.0.0/8`.
pub fn parse_network(text: &str) -> Result<ipnet::IpNet, String> {
    text.parse::<ipnet::IpNet>()
        .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("{text:?} is neither an IP address nor a CIDR network"))
}

//! Sidecar addresses: HOST:PORT, unix:PATH or unix:///ABSOLUTE/PATH.

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Address {
    Tcp(String),
    Unix(String),
}

impl Address {
    pub(crate) fn parse(addr: &str) -> Address {
        match addr.strip_prefix("unix:") {
            Some(rest) => Address::Unix(rest.strip_prefix("//").unwrap_or(rest).to_string()),
            None => Address::Tcp(addr.to_string()),
        }
    }

    /// The host name (or IP address) of a TCP address; "localhost" for a Unix socket.
    pub(crate) fn host(&self) -> &str {
        match self {
            Address::Tcp(host_port) => host_port.rsplit_once(':').map_or(host_port.as_str(), |(h, _)| h)
                .trim_start_matches('[').trim_end_matches(']'),
            Address::Unix(_) => "localhost",
        }
    }

    /// The HTTP/2 `:authority` of requests on this address.
    pub(crate) fn authority(&self) -> &str {
        match self {
            Address::Tcp(host_port) => host_port,
            Address::Unix(_) => "localhost",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Address;

    #[test]
    fn parses_the_three_forms() {
        assert_eq!(Address::parse("127.0.0.1:50051"), Address::Tcp("127.0.0.1:50051".into()));
        assert_eq!(Address::parse("unix:/tmp/s.sock"), Address::Unix("/tmp/s.sock".into()));
        assert_eq!(Address::parse("unix:rel.sock"), Address::Unix("rel.sock".into()));
        assert_eq!(Address::parse("unix:///tmp/s.sock"), Address::Unix("/tmp/s.sock".into()));
    }

    #[test]
    fn host_drops_the_port() {
        assert_eq!(Address::parse("sidecar.internal:50051").host(), "sidecar.internal");
        assert_eq!(Address::parse("[::1]:50051").host(), "::1");
        assert_eq!(Address::parse("unix:/tmp/s.sock").host(), "localhost");
    }
}

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
}

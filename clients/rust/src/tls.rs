//! TLS for the HTTP/2 connection: rustls 0.20 through tokio-rustls 0.23, PEM inputs.
use std::sync::Arc;

use rustls::{Certificate, ClientConfig, PrivateKey, RootCertStore, ServerName};
use tokio_rustls::TlsConnector;

use crate::error::Error;

/// TLS settings of `Options::tls` (PEM bytes, as read from the files).
#[derive(Clone, Debug, Default)]
pub struct Tls {
    /// The CA certificate(s) the sidecar's certificate must chain to.
    pub ca_pem: Vec<u8>,
    /// A client certificate chain and its key, for a sidecar that requires mutual TLS.
    pub client_cert_pem: Option<Vec<u8>>,
    pub client_key_pem: Option<Vec<u8>>,
    /// The DNS name checked against the certificate; default: the address's host. rustls
    /// 0.20 checks DNS names only, so a sidecar reached by IP address needs one here.
    pub server_name: Option<String>,
}

fn bad(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::Connect(format!("TLS: {what}: {detail}"))
}

fn certificates(pem: &[u8], what: &str) -> Result<Vec<Certificate>, Error> {
    let ders = rustls_pemfile::certs(&mut &pem[..]).map_err(|e| bad(what, e))?;
    if ders.is_empty() {
        return Err(bad(what, "no PEM certificate found"));
    }
    Ok(ders.into_iter().map(Certificate).collect())
}

fn private_key(pem: &[u8]) -> Result<PrivateKey, Error> {
    let mut reader = pem;
    loop {
        match rustls_pemfile::read_one(&mut reader).map_err(|e| bad("client key", e))? {
            Some(rustls_pemfile::Item::PKCS8Key(der))
            | Some(rustls_pemfile::Item::RSAKey(der))
            | Some(rustls_pemfile::Item::ECKey(der)) => return Ok(PrivateKey(der)),
            Some(_) => continue,
            None => return Err(bad("client key", "no PEM private key found")),
        }
    }
}

/// The connector and the name to verify, for a sidecar at `host`.
pub(crate) fn connector(tls: &Tls, host: &str) -> Result<(TlsConnector, ServerName), Error> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(&tls.ca_pem, "CA certificate")? {
        roots.add(&cert).map_err(|e| bad("CA certificate", e))?;
    }
    let builder = ClientConfig::builder().with_safe_defaults().with_root_certificates(roots);
    let mut config = match (&tls.client_cert_pem, &tls.client_key_pem) {
        (Some(cert), Some(key)) => builder
            .with_single_cert(certificates(cert, "client certificate")?, private_key(key)?)
            .map_err(|e| bad("client certificate", e))?,
        (None, None) => builder.with_no_client_auth(),
        _ => return Err(bad("client certificate", "give both the certificate and its key")),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    let name = tls.server_name.as_deref().unwrap_or(host);
    let server_name = match ServerName::try_from(name) {
        Ok(ServerName::DnsName(dns)) => ServerName::DnsName(dns),
        _ => return Err(bad("server name", format!(
            "{name:?} is not a DNS name; set Tls::server_name to a name in the certificate"))),
    };
    Ok((TlsConnector::from(Arc::new(config)), server_name))
}

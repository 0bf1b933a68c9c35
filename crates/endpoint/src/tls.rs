//! Certificates (load or generate), the SPKI pin Chromium needs, and the rustls configs of
//! both protocols (TLS 1.3 only, so TCP and QUIC run the same handshake).

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// Subject alternative names of a generated certificate (testbed server address + loopback).
pub const GENERATED_SANS: [&str; 3] = ["198.18.2.2", "localhost", "127.0.0.1"];

pub struct Identity {
    pub certs: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

/// Load `cert.pem` + `key.pem` from `dir`, generating them (self-signed) when absent.
pub fn load_or_generate(dir: &Path) -> Result<Identity> {
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    if !cert_path.exists() || !key_path.exists() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let sans: Vec<String> = GENERATED_SANS.iter().map(|s| s.to_string()).collect();
        let ck = rcgen::generate_simple_self_signed(sans).context("generating certificate")?;
        std::fs::write(&cert_path, ck.cert.pem())?;
        std::fs::write(&key_path, ck.signing_key.serialize_pem())?;
    }
    let certs = load_certs(&cert_path)?;
    let key = PrivateKeyDer::from_pem_file(&key_path).with_context(|| format!("reading key {}", key_path.display()))?;
    Ok(Identity { certs, key })
}

pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("reading {}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing {}", path.display()))?;
    if certs.is_empty() {
        bail!("{}: no certificate found", path.display());
    }
    Ok(certs)
}

/// Read one DER TLV at `buf`: (tag, header length, content length).
fn der_tlv(buf: &[u8]) -> Result<(u8, usize, usize)> {
    let tag = *buf.first().ok_or_else(|| anyhow!("truncated DER"))?;
    let first = *buf.get(1).ok_or_else(|| anyhow!("truncated DER"))?;
    if first < 0x80 {
        return Ok((tag, 2, first as usize));
    }
    let n = (first & 0x7f) as usize;
    if n == 0 || n > 4 || buf.len() < 2 + n {
        bail!("unsupported DER length");
    }
    let len = buf[2..2 + n].iter().fold(0usize, |a, b| (a << 8) | *b as usize);
    Ok((tag, 2 + n, len))
}

/// The DER SubjectPublicKeyInfo of an X.509 certificate (RFC 5280 §4.1: the 7th field of
/// tbsCertificate, counting the optional [0] version).
pub fn spki_der(cert: &[u8]) -> Result<&[u8]> {
    let (_, h, _) = der_tlv(cert)?; // Certificate SEQUENCE
    let tbs = &cert[h..];
    let (_, h, len) = der_tlv(tbs)?; // tbsCertificate SEQUENCE
    let mut p = &tbs[h..h + len];
    let mut field = 0;
    loop {
        let (tag, h, len) = der_tlv(p)?;
        if field == 0 && tag != 0xa0 {
            field = 1; // no explicit version
        }
        if field == 6 {
            return Ok(&p[..h + len]);
        }
        p = &p[h + len..];
        field += 1;
    }
}

/// base64(sha256(SPKI)), as `openssl x509 -pubkey | openssl pkey -pubin -outform der | sha256 | base64`.
pub fn spki_sha256_b64(cert: &[u8]) -> Result<String> {
    let spki = spki_der(cert)?;
    let digest = ring::digest::digest(&ring::digest::SHA256, spki);
    Ok(base64::engine::general_purpose::STANDARD.encode(digest.as_ref()))
}

fn tls13_server(id: &Identity, alpn: &[&[u8]]) -> Result<rustls::ServerConfig> {
    let mut cfg = rustls::ServerConfig::builder_with_protocol_versions(&[&rustls::version::TLS13])
        .with_no_client_auth()
        .with_single_cert(id.certs.clone(), id.key.clone_key())?;
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(cfg)
}

/// QUIC server TLS: ALPN h3, 0-RTT enabled (QUIC requires max_early_data_size = 2^32-1).
pub fn h3_server_config(id: &Identity) -> Result<rustls::ServerConfig> {
    let mut cfg = tls13_server(id, &[b"h3"])?;
    cfg.max_early_data_size = u32::MAX;
    cfg.send_tls13_tickets = 2;
    Ok(cfg)
}

/// TCP server TLS: ALPN h2 only (an HTTP/1.1 client fails to negotiate instead of being served).
pub fn h2_server_config(id: &Identity) -> Result<rustls::ServerConfig> {
    tls13_server(id, &[b"h2"])
}

pub enum Trust {
    Roots(Vec<CertificateDer<'static>>),
    Insecure,
}

pub fn client_config(trust: &Trust, alpn: &[u8]) -> Result<rustls::ClientConfig> {
    let builder = rustls::ClientConfig::builder_with_protocol_versions(&[&rustls::version::TLS13]);
    let mut cfg = match trust {
        Trust::Roots(certs) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in certs {
                roots.add(c.clone()).context("adding CA certificate")?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        Trust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(rustls::crypto::ring::default_provider())))
            .with_no_client_auth(),
    };
    cfg.alpn_protocols = vec![alpn.to_vec()];
    cfg.enable_early_data = true;
    Ok(cfg)
}

pub fn server_name(host: &str) -> Result<ServerName<'static>> {
    ServerName::try_from(host.to_string()).map_err(|e| anyhow!("bad server name '{host}': {e}"))
}

/// `--insecure`: accept any certificate, still checking handshake signatures.
#[derive(Debug)]
struct AcceptAnyCert(rustls::crypto::CryptoProvider);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spki_of_generated_cert_matches_its_key() {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let spki = spki_der(ck.cert.der()).unwrap();
        use rcgen::PublicKeyData;
        assert_eq!(spki, ck.signing_key.subject_public_key_info().as_slice());
        assert_eq!(spki_sha256_b64(ck.cert.der()).unwrap().len(), 44);
    }

    #[test]
    fn generated_identity_is_reloaded() {
        let dir = std::env::temp_dir().join(format!("ll-tls-{}", std::process::id()));
        let a = load_or_generate(&dir).unwrap();
        let b = load_or_generate(&dir).unwrap();
        assert_eq!(a.certs[0], b.certs[0]);
        std::fs::remove_dir_all(&dir).ok();
    }
}

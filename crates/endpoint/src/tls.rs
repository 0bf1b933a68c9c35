//! Certificates (load or generate), the SPKI pin Chromium needs, and the rustls configs of
//! both protocols (TLS 1.3 only, so TCP and QUIC run the same handshake).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, KeyLog, SignatureScheme};

/// Subject alternative names of a generated certificate (testbed server address + loopback).
pub const GENERATED_SANS: [&str; 3] = ["198.18.2.2", "localhost", "127.0.0.1"];

pub struct Identity {
    pub certs: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

/// Load `cert.pem` + `key.pem` from `dir`, generating them (self-signed) when both are
/// absent. One without the other is an error: the user's file is never overwritten.
pub fn load_or_generate(dir: &Path) -> Result<Identity> {
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    let (has_cert, has_key) = (cert_path.symlink_metadata().is_ok(), key_path.symlink_metadata().is_ok());
    if has_cert != has_key {
        let (present, missing) = if has_cert { ("cert.pem", "key.pem") } else { ("key.pem", "cert.pem") };
        bail!(
            "{}: has {present} but no {missing}; give both, or neither to generate a self-signed pair \
             (nothing was written)",
            dir.display()
        );
    }
    if !has_cert {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let sans: Vec<String> = GENERATED_SANS.iter().map(|s| s.to_string()).collect();
        let ck = rcgen::generate_simple_self_signed(sans).context("generating certificate")?;
        // the key first: a concurrent server that finds the cert finds its key too
        if write_new(&key_path, ck.signing_key.serialize_pem().as_bytes())? {
            write_new(&cert_path, ck.cert.pem().as_bytes())?;
        }
    }
    let certs = load_certs(&cert_path)?;
    let pem = read_small(&key_path, "key")?;
    let key = PrivateKeyDer::from_pem_slice(&pem).with_context(|| format!("reading key {}", key_path.display()))?;
    Ok(Identity { certs, key })
}

/// Create `path` only if it does not exist, never replacing a file another process or the
/// user put there meanwhile; false when it existed (then another server generated the pair).
fn write_new(path: &Path, bytes: &[u8]) -> Result<bool> {
    let mut f = match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
    };
    f.write_all(bytes).with_context(|| format!("writing {}", path.display()))?;
    Ok(true)
}

/// A certificate or key file: regular and small (crate::userfile), never a FIFO or device.
fn read_small(path: &Path, what: &str) -> Result<Vec<u8>> {
    crate::userfile::read_existing(path, what, crate::userfile::SMALL_FILE_LIMIT).map_err(|e| anyhow!(e))
}

pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let pem = read_small(path, "certificate")?;
    let certs = CertificateDer::pem_slice_iter(&pem)
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

/// `--keylog PATH`: the TLS secrets of every connection the process makes or accepts, in
/// the NSS key log format Wireshark reads (one file per process; both protocols, so a pcap
/// of a QUIC and of a TCP run can be decrypted).
struct KeyLogTo {
    file: Mutex<File>,
}

impl std::fmt::Debug for KeyLogTo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyLogTo")
    }
}

impl KeyLog for KeyLogTo {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let line = format!("{label} {} {}\n", hex(client_random), hex(secret));
        // one write per line, unbuffered: a process killed at its timeout keeps what it logged
        if let Ok(mut f) = self.file.lock() {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

static KEY_LOG: OnceLock<Arc<dyn KeyLog>> = OnceLock::new();

/// Log the secrets of every TLS config made from now on to `path` (appended; created if
/// absent). Call once, before any config is built.
pub fn set_key_log(path: &Path) -> Result<()> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("--keylog {}: cannot open for writing", path.display()))?;
    KEY_LOG.set(Arc::new(KeyLogTo { file: Mutex::new(file) })).map_err(|_| anyhow!("the key log is already set"))
}

fn key_log() -> Option<Arc<dyn KeyLog>> {
    KEY_LOG.get().cloned()
}

fn tls13_server(id: &Identity, alpn: &[&[u8]]) -> Result<rustls::ServerConfig> {
    let mut cfg = rustls::ServerConfig::builder_with_protocol_versions(&[&rustls::version::TLS13])
        .with_no_client_auth()
        .with_single_cert(id.certs.clone(), id.key.clone_key())?;
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    if let Some(log) = key_log() {
        cfg.key_log = log;
    }
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
    client_config_offering(trust, alpn, None)
}

/// A TLS 1.3 client config that offers only `suite` when given (the interoperability
/// runner's ChaCha20 case asks a client to offer TLS_CHACHA20_POLY1305_SHA256 alone), else
/// every suite of the ring provider.
pub fn client_config_offering(
    trust: &Trust,
    alpn: &[u8],
    suite: Option<rustls::CipherSuite>,
) -> Result<rustls::ClientConfig> {
    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(only) = suite {
        provider.cipher_suites.retain(|s| s.suite() == only);
        if provider.cipher_suites.is_empty() {
            bail!("the ring provider has no cipher suite {only:?}");
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("TLS 1.3 with the chosen cipher suites")?;
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
    if let Some(log) = key_log() {
        cfg.key_log = log;
    }
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
    fn a_cert_without_its_key_is_an_error_and_never_overwritten() {
        let dir = std::env::temp_dir().join(format!("tls-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cert.pem"), "the user's certificate").unwrap();
        let e = load_or_generate(&dir).err().expect("refused").to_string();
        assert!(e.contains("has cert.pem but no key.pem"), "{e}");
        assert_eq!(std::fs::read_to_string(dir.join("cert.pem")).unwrap(), "the user's certificate");
        assert!(!dir.join("key.pem").exists());
        std::fs::remove_file(dir.join("cert.pem")).unwrap();
        assert!(load_or_generate(&dir).is_ok()); // neither: a generated pair
        assert!(load_or_generate(&dir).is_ok()); // both: loaded
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn spki_of_generated_cert_matches_its_key() {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let spki = spki_der(ck.cert.der()).unwrap();
        use rcgen::PublicKeyData;
        assert_eq!(spki, ck.signing_key.subject_public_key_info().as_slice());
        assert_eq!(spki_sha256_b64(ck.cert.der()).unwrap().len(), 44);
    }

    #[test]
    fn key_log_writes_nss_lines() {
        let path = std::env::temp_dir().join(format!("ll-keylog-{}.log", std::process::id()));
        std::fs::remove_file(&path).ok();
        let log = KeyLogTo { file: Mutex::new(File::create(&path).unwrap()) };
        log.log("CLIENT_HANDSHAKE_TRAFFIC_SECRET", &[0xab; 32], &[0x01, 0x02]);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(text, format!("CLIENT_HANDSHAKE_TRAFFIC_SECRET {} 0102\n", "ab".repeat(32)));
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

//! The TCP probe's congestion control, chosen per socket: a namespace's default is the host's
//! (bbr on some hosts), and only the initial namespace may change it to a restricted
//! algorithm such as cubic, so the probe asks for the scenario's on its own socket (root may).

use std::os::fd::AsRawFd;

/// TCP_CONGESTION on `sock`; the kernel's refusal is returned as a readable error.
pub fn set<S: AsRawFd>(sock: &S, name: &str) -> Result<(), String> {
    // SAFETY: a valid fd and a pointer to `name.len()` bytes.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr() as *const libc::c_void,
            name.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "TCP_CONGESTION {name}: {} (see net.ipv4.tcp_available_congestion_control)",
            std::io::Error::last_os_error()
        ))
    }
}

/// The congestion control `sock` runs.
pub fn get<S: AsRawFd>(sock: &S) -> Result<String, String> {
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: a valid fd and a buffer of `len` bytes the kernel fills.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 {
        return Err(format!("TCP_CONGESTION: {}", std::io::Error::last_os_error()));
    }
    let used = &buf[..len as usize];
    let end = used.iter().position(|&b| b == 0).unwrap_or(used.len());
    Ok(String::from_utf8_lossy(&used[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_socket_runs_what_it_asked_for_and_an_unknown_name_is_an_error() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        set(&s, "reno").unwrap(); // reno is built in and never restricted
        assert_eq!(get(&s).unwrap(), "reno");
        let e = set(&s, "no-such-cc").unwrap_err();
        assert!(e.contains("TCP_CONGESTION no-such-cc"), "{e}");
    }
}

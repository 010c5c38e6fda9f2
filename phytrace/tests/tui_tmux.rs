//! The real binary in a real terminal (tmux): replay a capture, look at the screen, use keys,
//! quit, and check the terminal is restored.

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// A private tmux server, killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(width: u16, height: u16, command: &str) -> Self {
        let version = Command::new("tmux").arg("-V").output();
        assert!(
            version.is_ok_and(|o| o.status.success()),
            "this test needs tmux (apt-get install tmux); it drives the TUI in a real terminal"
        );
        // One server per test: the tests of this file run in parallel.
        static SERVERS: AtomicUsize = AtomicUsize::new(0);
        let n = SERVERS.fetch_add(1, Ordering::Relaxed);
        let socket = format!("phytrace-test-{}-{n}", std::process::id());
        let tmux = Self { socket };
        tmux.run(&[
            "new-session",
            "-d",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            command,
        ]);
        tmux
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("run tmux");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p"])
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Waits until the screen contains all of `wanted`; panics with the screen after 10 s.
    fn wait_for(&self, wanted: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let screen = self.screen();
            if wanted.iter().all(|w| screen.contains(w)) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "screen never showed {wanted:?}:\n{screen}"
            );
            sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

#[test]
fn replay_in_tmux_shows_phys_registers_help_and_quits_cleanly() {
    let capture = common::data("rust-plug-unplug.ptrace");
    let command = format!(
        "{} tui --replay {} --speed 1000; echo \"exit=$?\"; stty -a | tr ' ' '\\n' | grep -x -- '-\\?icanon'; echo checked; sleep 60",
        common::PHYTRACE,
        capture
    );
    let tmux = Tmux::start(100, 30, &command);
    let screen = tmux.wait_for(&["phy_sim-0:01", "AX88772A", "end"]);
    assert!(screen.contains("Registers phy_sim-0:01"), "{screen}");
    assert!(
        screen.contains("BMSR"),
        "register panel lacks BMSR:\n{screen}"
    );
    assert!(screen.contains("LSTATUS"), "BMSR not decoded:\n{screen}");
    assert!(screen.contains("REPLAY"), "{screen}");

    tmux.keys(&["?"]);
    tmux.wait_for(&["keys", "pause / follow", "quit"]);
    // Any key closes the help; plain keys, as tmux may merge Escape with what follows.
    tmux.keys(&["x"]);
    tmux.keys(&["l"]);
    tmux.wait_for(&["Registers phy_sim-0:02"]);
    tmux.keys(&["s"]);
    tmux.wait_for(&[
        "Latencies phy_sim-0:02",
        "Link & phy_state",
        "MDIO/s phy_sim-0:02",
    ]);
    tmux.keys(&["s"]);
    tmux.wait_for(&["Registers phy_sim-0:02"]);

    tmux.keys(&["q"]);
    let screen = tmux.wait_for(&["exit=0", "checked"]);
    assert!(
        !screen.contains("PHYs"),
        "the TUI is still on screen:\n{screen}"
    );
    assert!(
        screen.lines().any(|l| l.trim() == "icanon"),
        "the terminal was left in raw mode:\n{screen}"
    );
    assert_eq!(tmux.run(&["display", "-p", "#{alternate_on}"]).trim(), "0");
}

#[test]
fn ctrl_l_draws_the_screen_anew_after_a_foreign_write() {
    let capture = common::data("rust-plug-unplug.ptrace");
    let command = format!(
        "{} tui --replay {} --speed 1000; echo \"exit=$?\"; sleep 60",
        common::PHYTRACE,
        capture
    );
    let tmux = Tmux::start(100, 30, &command);
    let clean = tmux.wait_for(&["phy_sim-0:01", "end"]);
    // What a kernel console sharing the terminal prints, where it happens to be.
    let tty = tmux.run(&["display", "-p", "#{pane_tty}"]);
    let foreign = "asix 1-1:1.0 eth0: Failed to enable software MII access\r\n";
    std::fs::write(tty.trim(), foreign.repeat(3)).unwrap();
    tmux.wait_for(&["Failed to enable software MII access"]);
    tmux.keys(&["C-l"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let screen = tmux.screen();
        if screen == clean {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Ctrl-L left the screen as:\n{screen}\nnot as before:\n{clean}"
        );
        sleep(Duration::from_millis(100));
    }
    tmux.keys(&["q"]);
    tmux.wait_for(&["exit=0"]);
}

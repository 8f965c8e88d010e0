//! A stand-in for Haply's Inverse Service, for the tests: a WebSocket server on a loopback
//! port speaking the simulation channel's protocol as Haply documents it (Inverse Service
//! 3.5, "Simulation Channel", "WebSocket Protocol"), scripted like the fake SDK libraries.
//!
//! On each connection it sends the inventory (one Inverse3 with its configuration, state
//! and status, and a wireless Verse Grip if scripted), then answers every client message
//! with one state update, no sooner than one period of the scripted rate after the
//! previous, so the client's loop runs at that rate. It parses each client message as JSON
//! and logs, per frame, the force of the Inverse3's `set_cursor_force` command, the session
//! profile and the preset the client asked for. The script can hold the grip's button
//! for a number of frames, drop the connection (TCP closed without a WebSocket close),
//! stop answering, unplug the Inverse3 (drop it from the device list), or list no
//! Inverse3 at all.
//!
//! The server is written on the blocking `tungstenite` API, apart from the device's own
//! tokio transport, so the two sides share no I/O code. Not part of the device layer
//! proper: nothing outside tests calls it.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

/// What the fake service does.
#[derive(Debug, Clone)]
pub struct Script {
    /// State updates per second (the Inverse3's rate through the service).
    pub rate_hz: f64,
    /// The Inverse3's id and device type (`inverse3`, `inverse3x`, `minverse`).
    pub device_id: String,
    pub device_type: String,
    /// A wireless Verse Grip with orientation and buttons.
    pub grip: bool,
    /// The grip's button `a` is held in frames before this one (`None`: always).
    pub button_until_frame: Option<u64>,
    /// The cursor position in frame `k`, m.
    pub position: fn(u64) -> [f64; 3],
    /// After answering this many frames, close the TCP connection without a WebSocket
    /// close (a service that died or a cable pulled).
    pub drop_after_frames: Option<u64>,
    /// After this many frames, read on but answer nothing (a stalled service).
    pub silent_after_frames: Option<u64>,
    /// From this frame on, list no Inverse3 (the device unplugged).
    pub unplug_at_frame: Option<u64>,
    /// List no Inverse3 in the inventory.
    pub no_inverse3: bool,
}

/// The grip's orientation: 0.3 rad about z.
pub const GRIP_ANGLE_RAD: f64 = 0.3;

/// The default cursor: at rest 20 mm from the centre along x.
pub fn resting_off_centre(_: u64) -> [f64; 3] {
    [0.02, 0.0, 0.0]
}

/// A cursor that starts at the centre and moves on a 20 mm circle at 0.25 Hz (counted in
/// frames of 1 ms), as a hand exploring the workspace.
pub fn circle_from_centre(frame: u64) -> [f64; 3] {
    let a = std::f64::consts::TAU * 0.25 * frame as f64 * 1e-3;
    [0.02 * a.sin(), 0.02 * (1.0 - a.cos()), 0.0]
}

impl Default for Script {
    fn default() -> Self {
        Script {
            rate_hz: 1000.0,
            device_id: "049D".into(),
            device_type: "inverse3".into(),
            grip: true,
            button_until_frame: None,
            position: resting_off_centre,
            drop_after_frames: None,
            silent_after_frames: None,
            unplug_at_frame: None,
            no_inverse3: false,
        }
    }
}

/// One client message, as the fake read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// 1 for the first message of a connection.
    pub frame: u64,
    /// Seconds since the connection opened.
    pub t_s: f64,
    /// The `set_cursor_force` vector, N (`None`: the message carried none).
    pub force: Option<[f64; 3]>,
    /// `session.configure.profile.name`, when the message carried it.
    pub profile: Option<String>,
    /// The Inverse3's `configure.preset.preset`, when the message carried it.
    pub preset: Option<String>,
    /// Seconds from the state update this message answers (sent by the fake) to its
    /// arrival: the client's turnaround plus the loopback.
    pub turnaround_s: f64,
}

#[derive(Debug, Default)]
struct Log {
    frames: Vec<Frame>,
    connections: usize,
    /// Messages that were not JSON or had a malformed command.
    malformed: usize,
}

/// A running fake service; stopped on drop.
pub struct FakeInverseService {
    address: String,
    log: Arc<Mutex<Log>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeInverseService {
    /// Starts the service on a free loopback port.
    pub fn start(script: Script) -> io::Result<FakeInverseService> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let address = format!("ws://{}", listener.local_addr()?);
        let log = Arc::new(Mutex::new(Log::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (log, stop) = (log.clone(), stop.clone());
            std::thread::Builder::new()
                .name("fake-inverse-service".into())
                .spawn(move || accept_loop(listener, &script, &log, &stop))?
        };
        Ok(FakeInverseService {
            address,
            log,
            stop,
            thread: Some(thread),
        })
    }

    /// `ws://127.0.0.1:PORT`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The client messages of every connection so far, in order.
    pub fn frames(&self) -> Vec<Frame> {
        self.log
            .lock()
            .map(|l| l.frames.clone())
            .unwrap_or_default()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.log.lock().map(|l| l.connections).unwrap_or(0)
    }

    /// Client messages that were not the protocol's JSON.
    pub fn malformed(&self) -> usize {
        self.log.lock().map(|l| l.malformed).unwrap_or(0)
    }

    /// Waits until no client message arrived for 50 ms (at most `timeout`), so that the
    /// last commands of a closed device are logged.
    pub fn settle(&self, timeout: Duration) {
        let start = Instant::now();
        let mut seen = usize::MAX;
        while start.elapsed() < timeout {
            let n = self.log.lock().map(|l| l.frames.len()).unwrap_or(0);
            if n == seen {
                return;
            }
            seen = n;
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `n` client messages arrived or `timeout` passed; true if they did.
    pub fn wait_for_frames(&self, n: usize, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.log.lock().map(|l| l.frames.len()).unwrap_or(0) >= n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }
}

impl Drop for FakeInverseService {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: TcpListener, script: &Script, log: &Mutex<Log>, stop: &AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((stream, _)) => {
                if let Ok(mut l) = log.lock() {
                    l.connections += 1;
                }
                serve(stream, script, log, stop);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(_) => return,
        }
    }
}

fn vec3(v: [f64; 3]) -> Value {
    json!({"x": v[0], "y": v[1], "z": v[2]})
}

/// The Inverse3's entry: configuration only in the inventory.
fn inverse3(script: &Script, frame: u64, force: [f64; 3], with_config: bool) -> Value {
    let mut d = json!({
        "device_id": script.device_id,
        "state": {
            "cursor_position": vec3((script.position)(frame)),
            "cursor_velocity": vec3([0.0; 3]),
            "current_cursor_force": vec3(force),
            "mode": "idle",
            "control_domain": "cartesian",
            "control_mode": if frame == 0 { "idle" } else { "force" },
        },
        "status": {"calibrated": true, "in_use": frame > 0, "power_supply": true,
                   "ready": true, "started": true},
    });
    if with_config {
        d["config"] = json!({
            "type": script.device_type,
            "port": "/dev/ttyACM0",
            "device_info": {"id": script.device_id, "major_version": 7, "minor_version": 4,
                            "device_type": 4, "uuid": "2D35F80DD9005F599B68F49944CB049D"},
            "extended_device_id": "2D35F80DD9005F599B68F49944CB049D",
            "extended_firmware_version": "8C20FDC8010AA1E15AA133CDA2534874",
            "gravity_compensation": {"enabled": true, "scaling_factor": 1.0},
            "handedness": "right",
            "torque_scaling": {"enabled": true},
            "preset": "defaults",
            "basis": {"permutation": "XYZ"},
        });
    }
    d
}

fn grip(script: &Script, frame: u64, with_config: bool) -> Value {
    let held = script.button_until_frame.is_none_or(|until| frame < until);
    let (s, c) = (GRIP_ANGLE_RAD / 2.0).sin_cos();
    let mut g = json!({
        "device_id": "1102",
        "state": {
            "buttons": {"a": held, "b": false, "c": false},
            "orientation": {"w": c, "x": 0.0, "y": 0.0, "z": s},
            "hall": 16,
            "battery_level": 0.9,
        },
        "status": {"ready": true, "connected": true, "awake": true},
    });
    if with_config {
        g["config"] = json!({"type": "wireless_verse_grip", "port": "/dev/ttyACM1",
                             "major_version": 1, "minor_version": 0, "hardware_version": 1});
    }
    g
}

/// The inventory (frame 0, with configuration) or the state update of `frame`.
fn state_message(script: &Script, frame: u64, force: [f64; 3]) -> Value {
    let inventory = frame == 0;
    let listed = !script.no_inverse3 && script.unplug_at_frame.is_none_or(|at| frame < at);
    let devices: Vec<Value> = if listed {
        vec![inverse3(script, frame, force, inventory)]
    } else {
        vec![]
    };
    let mut m = json!({"session_id": 1, "inverse3": devices});
    if script.grip {
        m["wireless_verse_grip"] = json!([grip(script, frame, inventory)]);
    }
    m
}

/// What a client message carried: the force, the profile and the preset.
type Command = (Option<[f64; 3]>, Option<String>, Option<String>);

/// The force, profile and preset of a client message; `None` if it is not JSON.
fn parse_command(text: &str) -> Option<Command> {
    let v: Value = serde_json::from_str(text).ok()?;
    let profile = v["session"]["configure"]["profile"]["name"]
        .as_str()
        .map(str::to_string);
    let device = &v["inverse3"][0];
    let preset = device["configure"]["preset"]["preset"]
        .as_str()
        .map(str::to_string);
    let f = &device["commands"]["set_cursor_force"]["vector"];
    let force = match (f["x"].as_f64(), f["y"].as_f64(), f["z"].as_f64()) {
        (Some(x), Some(y), Some(z)) => Some([x, y, z]),
        _ => None,
    };
    Some((force, profile, preset))
}

/// One connection: the inventory, then one paced state update per client message.
fn serve(stream: TcpStream, script: &Script, log: &Mutex<Log>, stop: &AtomicBool) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_nodelay(true);
    let Ok(mut ws) = tungstenite::accept(stream) else {
        return;
    };
    // Reads wake up to see a stop request.
    let _ = ws
        .get_ref()
        .set_read_timeout(Some(Duration::from_millis(20)));
    let opened = Instant::now();
    let period = Duration::from_secs_f64(1.0 / script.rate_hz.max(1.0));
    if !send(&mut ws, &state_message(script, 0, [0.0; 3])) {
        return;
    }
    let mut frame = 0u64;
    let mut due = Instant::now();
    let mut sent_at = Instant::now();
    let mut force = [0.0; 3];
    while !stop.load(Ordering::Acquire) {
        let text = match ws.read() {
            Ok(Message::Text(t)) => t.to_string(),
            Ok(Message::Close(_)) => return,
            Ok(_) => continue,
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
        };
        frame += 1;
        let turnaround_s = sent_at.elapsed().as_secs_f64();
        let parsed = parse_command(&text);
        if let Ok(mut l) = log.lock() {
            match parsed {
                Some((f, profile, preset)) => {
                    if let Some(f) = f {
                        force = f;
                    }
                    l.frames.push(Frame {
                        frame,
                        t_s: opened.elapsed().as_secs_f64(),
                        force: f,
                        profile,
                        preset,
                        turnaround_s,
                    });
                }
                None => l.malformed += 1,
            }
        }
        if script.drop_after_frames.is_some_and(|n| frame > n) {
            let _ = ws.get_ref().shutdown(Shutdown::Both);
            return;
        }
        if script.silent_after_frames.is_some_and(|n| frame > n) {
            continue;
        }
        // Paced on absolute deadlines, as a device's servo clock: a late update is sent
        // at once and the next keeps its own time (after ten periods behind, the clock
        // restarts from now rather than bursting).
        due += period;
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        } else if now - due > period * 10 {
            due = now;
        }
        sent_at = Instant::now();
        if !send(&mut ws, &state_message(script, frame, force)) {
            return;
        }
    }
}

/// Sends `v`; false when the connection is gone.
fn send(ws: &mut WebSocket<TcpStream>, v: &Value) -> bool {
    ws.send(Message::Text(v.to_string().into())).is_ok()
}

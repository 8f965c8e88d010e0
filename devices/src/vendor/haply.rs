//! Haply Inverse3 (and Inverse3x, Minverse) through Haply's Inverse Service, with the
//! handle's orientation and buttons from a Verse Grip where one is paired.
//!
//! The service is a local WebSocket server (the simulation channel, `ws://localhost:10001`
//! by default; `HAPTICS_HAPLY_SERVICE` names another address). On connection it sends an
//! inventory of every device (configuration, state, status); after that it answers each
//! message it receives with exactly one state update, so the cadence is the client's:
//! the device's I/O thread answers every state update at once with one force command
//! (`set_cursor_force`, newtons), and the loop runs at the service's rate (Haply's
//! documentation, "Simulation Channel" and "WebSocket Protocol", Inverse Service 3.5).
//! The first command also names the session (`session.configure.profile`) and selects the
//! `arm_front_centered` preset, which puts the origin at the centre of the workspace.
//!
//! Haply's own client, the `haply` crate, provides the wire types, the command framing
//! (`ServiceMsg`, `update_entire_msg`) and the merge of partial state updates into the
//! device list (`update_state_on_message`). The transport loop is ours, on
//! tokio-tungstenite (the crate's own transport library): the crate's
//! `InverseWebSocketClient::listen` passes on text frames only and keeps polling a stream
//! that has ended, so it cannot tell the haptic thread that the service went away.
//!
//! The I/O thread and the haptic thread exchange state through the lock-free slots of
//! [`super::handoff`], as with OpenHaptics: the I/O thread publishes the latest pose and
//! buttons and sends the latest wrench, zero when it is more than [`STALE_FRAMES`] frames
//! old (the haptic thread stalled), clamped to the model's force limit whatever the layers
//! above did. Faults are fatal [`VendorFault`]s ([`fault_name`]): the connection closed, a
//! transport error, the Inverse3 left the service's device list (unplugged), or no state
//! for [`SERVO_SILENCE`]. On each the I/O thread sends one last zero force where the
//! connection still takes it and ends; the next [`Device::read`] reports the fault.
//!
//! Limits: the service reports no force, stiffness or workspace limit, so they come from
//! [`specs::haply`] by the device type in the inventory. The Inverse3 renders force only
//! (3-DOF out); it senses 6 DOF when a Verse Grip reports an orientation, else 3.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use haply::device_model::{
    Buttons, Command, Inverse3Configure, Inverse3Device, PresetConfig, ProfileConfig, ServiceData,
    ServiceMsg, SessionConfigure, SessionMsg, TimestampedServiceData, Vec3D, Vec4D,
    VerseGripDuplicateMode,
};
use nalgebra::{Quaternion, UnitQuaternion, Vector3};
use tokio_tungstenite::tungstenite::Message;

use super::handoff::SeqSlot;
use super::{clamp3, specs, LibrarySource, Probe, ProbedDevice, Vendor, VendorError, VendorFault};
use crate::Device;
use crate::DeviceError;
use crate::DeviceInfo;
use crate::DeviceSample;
use crate::Pose;
use crate::Workspace;
use crate::Wrench;

/// The simulation channel's default address (Haply's documentation).
pub const DEFAULT_ADDRESS: &str = "ws://localhost:10001";
/// The session name the service shows (Haply Hub lists sessions by it).
pub const PROFILE_NAME: &str = "haptics:renderer";
/// The preset that puts the origin at the workspace centre.
pub const PRESET: &str = "arm_front_centered";
/// Frames after which a wrench from the haptic thread counts as stale and zero is sent.
pub const STALE_FRAMES: u64 = 10;
/// How long the service may go without a state update before reads report
/// [`VendorFault::SERVO_STOPPED`].
pub const SERVO_SILENCE: Duration = Duration::from_millis(100);
/// How long opening waits for the connection and for the inventory.
const OPEN_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the I/O thread wakes without traffic (to see a stop request or silence).
const POLL: Duration = Duration::from_millis(5);

/// Our fault codes (the service has none of its own on this channel).
pub const FAULT_CLOSED: i32 = 1;
pub const FAULT_TRANSPORT: i32 = 2;
pub const FAULT_DEVICE_LOST: i32 = 3;

/// The name of one of our Haply fault codes.
pub fn fault_name(code: i32) -> &'static str {
    match code {
        FAULT_CLOSED => "the service closed the connection",
        FAULT_TRANSPORT => "the connection failed",
        FAULT_DEVICE_LOST => "the Inverse3 left the service's device list (unplugged?)",
        _ => "(unknown Haply fault)",
    }
}

/// The service address: `HAPTICS_HAPLY_SERVICE` if set (a `ws://` URL or `host:port`),
/// else [`DEFAULT_ADDRESS`].
pub fn service_source() -> LibrarySource {
    let source = super::library_source(Vendor::Haply);
    let text = source.file.to_string_lossy().into_owned();
    LibrarySource {
        file: websocket_url(&text).into(),
        from_env: source.from_env,
    }
}

/// `host:port` as a WebSocket URL; a `ws://` or `wss://` URL as it is.
pub fn websocket_url(address: &str) -> String {
    let a = address.trim();
    if a.starts_with("ws://") || a.starts_with("wss://") {
        a.to_string()
    } else {
        format!("ws://{a}")
    }
}

/// What the inventory says about the devices used.
#[derive(Debug, Clone, PartialEq)]
struct Inventory {
    /// The Inverse3's id and device type (`inverse3`, `inverse3x`, `minverse`).
    device_id: String,
    device_type: String,
    /// The Verse Grip that gives orientation and buttons, if any.
    grip: Option<String>,
}

/// Every Verse Grip in `data`, wireless, custom, then wired: its id, orientation and
/// buttons (a, b, c as bits 0, 1, 2; a wired grip's one button as bit 0).
fn grips(data: &ServiceData) -> impl Iterator<Item = (&str, Option<Vec4D>, u32)> {
    let bits =
        |b: Option<Buttons>| b.map_or(0, |b| b.a as u32 | (b.b as u32) << 1 | (b.c as u32) << 2);
    let wireless = data.wireless_verse_grip.iter().map(move |g| {
        (
            g.device_id.as_str(),
            g.state.orientation,
            bits(g.state.buttons),
        )
    });
    let custom = data.custom_verse_grip.iter().map(move |g| {
        (
            g.device_id.as_str(),
            g.state.orientation,
            bits(g.state.buttons),
        )
    });
    let wired = data.verse_grip.iter().map(|g| {
        let button = g.state.button.unwrap_or(false) as u32;
        (g.device_id.as_str(), g.state.orientation, button)
    });
    wireless.chain(custom).chain(wired)
}

/// The first Inverse3 in `data` and the first Verse Grip (wireless, custom, then wired)
/// that reports an orientation.
fn inventory(data: &ServiceData) -> Option<Inventory> {
    let inv = data.inverse3.first()?;
    let grip = grips(data)
        .find(|(_, o, _)| o.is_some())
        .map(|(id, _, _)| id.to_string());
    Some(Inventory {
        device_id: inv.device_id.clone(),
        device_type: device_type(inv),
        grip,
    })
}

/// The device type the inventory gives an Inverse3 (`inverse3`, `minverse`, ...), empty
/// when its configuration is missing.
fn device_type(d: &Inverse3Device) -> String {
    d.config
        .as_ref()
        .and_then(|c| serde_json::to_value(c.type_).ok())
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The capabilities of the inventoried devices.
fn device_info(inv: &Inventory) -> DeviceInfo {
    let spec = specs::haply(&inv.device_type);
    DeviceInfo {
        name: format!("Haply {}", spec.name),
        dof_sensed: if inv.grip.is_some() { 6 } else { 3 },
        dof_actuated: 3,
        max_force_n: spec.max_force_n,
        max_continuous_force_n: spec.max_force_n,
        max_torque_nm: 0.0,
        max_stiffness_n_per_m: spec.max_linear_stiffness_n_per_m,
        max_angular_stiffness_nm_per_rad: 0.0,
        workspace: Workspace::Sphere {
            radius_m: spec.workspace_radius_m,
        },
    }
}

/// The sample slot: frame, position (m), orientation (w, x, y, z), buttons.
type SampleSlot = SeqSlot<9>;
const IDLE_SAMPLE: [f64; 9] = [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0];

/// The frame's sample from the merged state: the Inverse3's cursor position, the grip's
/// orientation and buttons ([`grips`]). `None` when the Inverse3 is no longer listed.
fn sample_of(data: &ServiceData, inv: &Inventory, frame: u64) -> Option<[f64; 9]> {
    let d = data
        .inverse3
        .iter()
        .find(|d| d.device_id == inv.device_id)?;
    let p = d.state.cursor_position.unwrap_or_default();
    let (orientation, buttons) = inv
        .grip
        .as_deref()
        .and_then(|id| grips(data).find(|(gid, _, _)| *gid == id))
        .map_or((None, 0), |(_, o, b)| (o, b));
    let q = orientation.map_or([1.0, 0.0, 0.0, 0.0], |o| {
        [o.w as f64, o.x as f64, o.y as f64, o.z as f64]
    });
    Some([
        frame as f64,
        p.x as f64,
        p.y as f64,
        p.z as f64,
        q[0],
        q[1],
        q[2],
        q[3],
        buttons as f64,
    ])
}

/// State shared by the haptic thread and the I/O thread.
struct Io {
    epoch: Instant,
    /// The model's force limit (f64 bits), set from the inventory before the first command.
    max_force_n: AtomicU64,
    sample: SampleSlot,
    /// fx, fy, fz (N) and the frame the haptic thread had seen when it wrote them (-1:
    /// nothing written).
    wrench: SeqSlot<4>,
    frames: AtomicU64,
    /// 0, or the fault code + 1000 (so that 0 can mean "none" for negative codes too).
    fault: AtomicU64,
    stop: AtomicBool,
    /// Force commands sent.
    commands: AtomicU64,
}

impl Io {
    /// Nothing published yet, no force limit (zero is sent until the inventory sets it).
    fn new() -> Io {
        Io {
            epoch: Instant::now(),
            max_force_n: AtomicU64::new(0.0f64.to_bits()),
            sample: SeqSlot::new(IDLE_SAMPLE),
            wrench: SeqSlot::new([0.0, 0.0, 0.0, -1.0]),
            frames: AtomicU64::new(0),
            fault: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            commands: AtomicU64::new(0),
        }
    }

    fn set_fault(&self, code: i32) {
        let _ = self.fault.compare_exchange(
            0,
            (code + 1000) as u64,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    fn fault(&self) -> Option<VendorFault> {
        match self.fault.load(Ordering::Acquire) {
            0 => None,
            v => Some(VendorFault {
                vendor: Vendor::Haply,
                code: v as i32 - 1000,
                internal: 0,
            }),
        }
    }

    /// The force to send in frame `frame`: the haptic thread's latest, zero when stale,
    /// torn, not finite or stopping; clamped to the model's limit.
    fn force_for(&self, frame: u64) -> [f64; 3] {
        if self.stop.load(Ordering::Acquire) {
            return [0.0; 3];
        }
        match self.wrench.load() {
            Some([x, y, z, written])
                if written >= 0.0
                    && frame.saturating_sub(written as u64) <= STALE_FRAMES
                    && [x, y, z].iter().all(|v| v.is_finite()) =>
            {
                clamp3(
                    [x, y, z],
                    f64::from_bits(self.max_force_n.load(Ordering::Acquire)),
                )
            }
            _ => [0.0; 3],
        }
    }
}

/// A Haply Inverse3 through the Inverse Service.
pub struct HaplyDevice {
    io: Arc<Io>,
    thread: Option<std::thread::JoinHandle<()>>,
    info: DeviceInfo,
    source: LibrarySource,
    grip: Option<String>,
    last_frame: u64,
    last_change: Instant,
    last_sample: [f64; 9],
}

/// The wire message of one force command (with the one-shot handshake on the first).
fn command(inv: &Inventory, force: [f64; 3], handshake: bool) -> ServiceMsg {
    let mut msg = ServiceMsg {
        session: SessionMsg::default(),
        ..ServiceMsg::default()
    };
    let mut commands = vec![Command::SetCursorForce {
        device_id: inv.device_id.clone(),
        vector: Vec3D {
            x: force[0] as f32,
            y: force[1] as f32,
            z: force[2] as f32,
        },
        execute: true,
    }];
    if handshake {
        commands.push(Command::ConfigureSession(SessionConfigure {
            profile: Some(ProfileConfig {
                name: PROFILE_NAME.into(),
                required_version: None,
            }),
            ..SessionConfigure::default()
        }));
        commands.push(Command::ConfigureInverse3 {
            device_id: inv.device_id.clone(),
            config: Inverse3Configure {
                preset: Some(PresetConfig {
                    preset: PRESET.into(),
                }),
                ..Inverse3Configure::default()
            },
        });
    }
    // update_entire_msg fails only on commands it cannot frame; these it always can.
    let _ = haply::state::update_entire_msg(&commands, &mut msg);
    msg
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;
type State = Arc<tokio::sync::Mutex<TimestampedServiceData>>;

/// An empty device list, for the crate's merge to fill.
fn empty_state() -> State {
    Arc::new(tokio::sync::Mutex::new(TimestampedServiceData {
        data: ServiceData::default(),
        timestamp: Instant::now(),
    }))
}

/// Merges one message of the service into `state` (the `haply` crate's merge: a message
/// with configuration replaces the devices, one without updates their state and status).
async fn merge(state: &State, text: String, first: &mut bool) {
    haply::state::update_state_on_message(
        state.clone(),
        text,
        first,
        VerseGripDuplicateMode::default(),
    )
    .await;
}

/// The single-threaded tokio runtime the connection runs on.
fn runtime() -> Result<tokio::runtime::Runtime, VendorError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| VendorError::Device {
            vendor: Vendor::Haply,
            detail: format!("starting the I/O runtime: {e}"),
        })
}

/// Connects and reads the inventory (merged into `state`).
async fn connect(url: &str, state: &State) -> Result<(Socket, Inventory), VendorError> {
    let unreachable = |detail: String| VendorError::ServiceUnreachable {
        vendor: Vendor::Haply,
        address: url.to_string(),
        detail,
    };
    let (mut ws, _) =
        match tokio::time::timeout(OPEN_TIMEOUT, tokio_tungstenite::connect_async(url)).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(unreachable(e.to_string())),
            Err(_) => {
                return Err(unreachable(format!(
                    "no answer within {} s",
                    OPEN_TIMEOUT.as_secs()
                )))
            }
        };
    let device_error = |detail: String| VendorError::Device {
        vendor: Vendor::Haply,
        detail,
    };
    let text = loop {
        match tokio::time::timeout(OPEN_TIMEOUT, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => break t.to_string(),
            Ok(Some(Ok(Message::Close(_)))) | Ok(None) => {
                return Err(device_error(
                    "the service closed the connection before its inventory".into(),
                ))
            }
            Ok(Some(Ok(_))) => continue,
            Ok(Some(Err(e))) => return Err(device_error(format!("reading the inventory: {e}"))),
            Err(_) => {
                return Err(device_error(format!(
                    "the service sent no inventory within {} s",
                    OPEN_TIMEOUT.as_secs()
                )))
            }
        }
    };
    merge(state, text, &mut true).await;
    let inv = inventory(&state.lock().await.data).ok_or_else(|| {
        device_error("the service lists no Inverse3 (is it plugged in and powered?)".into())
    })?;
    Ok((ws, inv))
}

async fn send(ws: &mut Socket, msg: &ServiceMsg) -> bool {
    match serde_json::to_string(msg) {
        Ok(text) => ws.send(Message::Text(text.into())).await.is_ok(),
        Err(_) => false,
    }
}

/// The I/O thread's loop: answer each state update with the latest force until a stop
/// request or a fault.
async fn serve(io: &Io, mut ws: Socket, inv: &Inventory, state: &State) {
    let mut first = false;
    let mut last_update = Instant::now();
    loop {
        if io.stop.load(Ordering::Acquire) {
            let _ = send(&mut ws, &command(inv, [0.0; 3], false)).await;
            let _ = ws.close(None).await;
            return;
        }
        let text = match tokio::time::timeout(POLL, ws.next()).await {
            Err(_) => {
                if last_update.elapsed() > SERVO_SILENCE {
                    io.set_fault(VendorFault::SERVO_STOPPED);
                    let _ = send(&mut ws, &command(inv, [0.0; 3], false)).await;
                    return;
                }
                continue;
            }
            Ok(Some(Ok(Message::Text(t)))) => t.to_string(),
            Ok(Some(Ok(Message::Close(_)))) | Ok(None) => {
                io.set_fault(FAULT_CLOSED);
                return;
            }
            Ok(Some(Ok(_))) => continue,
            Ok(Some(Err(_))) => {
                io.set_fault(FAULT_TRANSPORT);
                return;
            }
        };
        last_update = Instant::now();
        merge(state, text, &mut first).await;
        let frame = io.frames.load(Ordering::Relaxed) + 1;
        let sample = sample_of(&state.lock().await.data, inv, frame);
        let Some(sample) = sample else {
            io.set_fault(FAULT_DEVICE_LOST);
            let _ = send(&mut ws, &command(inv, [0.0; 3], false)).await;
            return;
        };
        io.sample.store(&sample);
        io.frames.store(frame, Ordering::Release);
        if !send(&mut ws, &command(inv, io.force_for(frame), false)).await {
            io.set_fault(FAULT_TRANSPORT);
            return;
        }
        io.commands.fetch_add(1, Ordering::Relaxed);
    }
}

/// The I/O thread: connect, report the inventory to the opener, send the handshake, serve.
fn io_thread(io: Arc<Io>, url: String, opened: mpsc::Sender<Result<Inventory, VendorError>>) {
    let runtime = match runtime() {
        Ok(r) => r,
        Err(e) => {
            let _ = opened.send(Err(e));
            return;
        }
    };
    runtime.block_on(async {
        let state = empty_state();
        match connect(&url, &state).await {
            Ok((mut ws, inv)) => {
                io.max_force_n
                    .store(device_info(&inv).max_force_n.to_bits(), Ordering::Release);
                if !send(&mut ws, &command(&inv, [0.0; 3], true)).await {
                    let _ = opened.send(Err(VendorError::Device {
                        vendor: Vendor::Haply,
                        detail: "the service refused the first command".into(),
                    }));
                    return;
                }
                let _ = opened.send(Ok(inv.clone()));
                serve(&io, ws, &inv, &state).await;
            }
            Err(e) => {
                let _ = opened.send(Err(e));
            }
        }
    });
}

impl HaplyDevice {
    /// Connects to the service ([`service_source`]), takes its first Inverse3 (and Verse
    /// Grip), and returns once the first state update arrived.
    pub fn open() -> Result<HaplyDevice, VendorError> {
        let source = service_source();
        let url = source.file.to_string_lossy().into_owned();
        let io = Arc::new(Io::new());
        let (tx, rx) = mpsc::channel();
        let thread = {
            let io = io.clone();
            std::thread::Builder::new()
                .name("haply-io".into())
                .spawn(move || io_thread(io, url, tx))
                .map_err(|e| VendorError::Device {
                    vendor: Vendor::Haply,
                    detail: format!("starting the I/O thread: {e}"),
                })?
        };
        // The I/O thread answers within its own timeouts (connection, inventory).
        let inv = match rx.recv_timeout(OPEN_TIMEOUT * 3) {
            Ok(Ok(inv)) => inv,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                io.stop.store(true, Ordering::Release);
                return Err(VendorError::Device {
                    vendor: Vendor::Haply,
                    detail: "the service did not answer".into(),
                });
            }
        };
        let mut dev = HaplyDevice {
            io,
            thread: Some(thread),
            info: device_info(&inv),
            source,
            grip: inv.grip,
            last_frame: 0,
            last_change: Instant::now(),
            last_sample: IDLE_SAMPLE,
        };
        let start = Instant::now();
        while dev.frames() == 0 {
            if let Some(f) = dev.fault() {
                dev.close();
                return Err(VendorError::Device {
                    vendor: Vendor::Haply,
                    detail: format!("the first state update failed: {f}"),
                });
            }
            if start.elapsed() > OPEN_TIMEOUT {
                dev.close();
                return Err(VendorError::Device {
                    vendor: Vendor::Haply,
                    detail: format!(
                        "the service sent no state update within {} s of the first command",
                        OPEN_TIMEOUT.as_secs()
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(dev)
    }

    /// The service's address.
    pub fn service(&self) -> &LibrarySource {
        &self.source
    }

    /// The Verse Grip giving orientation and buttons, if one is paired.
    pub fn grip(&self) -> Option<&str> {
        self.grip.as_deref()
    }

    /// State updates received so far.
    pub fn frames(&self) -> u64 {
        self.io.frames.load(Ordering::Acquire)
    }

    /// Force commands sent so far (after the handshake).
    pub fn commands(&self) -> u64 {
        self.io.commands.load(Ordering::Relaxed)
    }

    /// The fault that ended the I/O loop, if any.
    pub fn fault(&self) -> Option<VendorFault> {
        self.io.fault()
    }

    /// Zeroes the output, sends a last zero force, closes the connection and joins the
    /// I/O thread. Idempotent; also run on drop.
    pub fn close(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.io.wrench.store(&[0.0, 0.0, 0.0, -1.0]);
        self.io.stop.store(true, Ordering::Release);
        let _ = thread.join();
    }
}

impl Drop for HaplyDevice {
    fn drop(&mut self) {
        self.close();
    }
}

impl Device for HaplyDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn read(&mut self) -> Result<DeviceSample, DeviceError> {
        if let Some(f) = self.io.fault() {
            return Err(DeviceError::Vendor(f));
        }
        let s = match self.io.sample.load() {
            Some(s) => {
                self.last_sample = s;
                s
            }
            None => self.last_sample,
        };
        let frame = s[0] as u64;
        let now = Instant::now();
        if frame != self.last_frame {
            self.last_frame = frame;
            self.last_change = now;
        } else if now.duration_since(self.last_change) > SERVO_SILENCE {
            return Err(DeviceError::Vendor(VendorFault {
                vendor: Vendor::Haply,
                code: VendorFault::SERVO_STOPPED,
                internal: 0,
            }));
        }
        let q = Quaternion::new(s[4], s[5], s[6], s[7]);
        Ok(DeviceSample {
            // Stamped at the read, as for OpenHaptics: the haptic thread and the service
            // run on separate clocks.
            time_s: now.duration_since(self.io.epoch).as_secs_f64(),
            pose: Pose::new(
                Vector3::new(s[1], s[2], s[3]),
                UnitQuaternion::new_normalize(q),
            ),
            buttons: s[8] as u32,
        })
    }

    fn write(&mut self, wrench: &Wrench) -> Result<(), DeviceError> {
        if let Some(f) = self.io.fault() {
            return Err(DeviceError::Vendor(f));
        }
        let f = wrench.force;
        self.io
            .wrench
            .store(&[f.x, f.y, f.z, self.last_frame as f64]);
        Ok(())
    }
}

/// Lists the service's Inverse3 devices from its inventory (no command is sent, so no
/// force).
pub fn probe() -> Probe {
    let source = service_source();
    let url = source.file.to_string_lossy().into_owned();
    let runtime = match runtime() {
        Ok(r) => r,
        Err(e) => return Probe::Unavailable(e),
    };
    runtime.block_on(async {
        let state = empty_state();
        match connect(&url, &state).await {
            Ok((mut ws, _)) => {
                let _ = ws.close(None).await;
                let data = state.lock().await.data.clone();
                let grip = inventory(&data).and_then(|i| i.grip);
                let devices = data
                    .inverse3
                    .iter()
                    .map(|d| {
                        let info = device_info(&Inventory {
                            device_id: d.device_id.clone(),
                            device_type: device_type(d),
                            grip: grip.clone(),
                        });
                        ProbedDevice {
                            model: format!("{} {}", info.name, d.device_id),
                            dof_sensed: info.dof_sensed,
                            dof_actuated: info.dof_actuated,
                            max_force_n: info.max_force_n,
                        }
                    })
                    .collect();
                Probe::Found {
                    source,
                    devices,
                    note: None,
                }
            }
            Err(VendorError::Device { detail, .. }) => Probe::Found {
                source,
                devices: vec![],
                note: Some(detail),
            },
            Err(e) => Probe::Unavailable(e),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn addresses_become_websocket_urls() {
        assert_eq!(websocket_url("localhost:10001"), "ws://localhost:10001");
        assert_eq!(
            websocket_url(" ws://10.0.0.2:9000/ "),
            "ws://10.0.0.2:9000/"
        );
        assert_eq!(websocket_url("wss://host"), "wss://host");
    }

    fn inv(grip: Option<&str>) -> Inventory {
        Inventory {
            device_id: "049D".into(),
            device_type: "inverse3".into(),
            grip: grip.map(str::to_string),
        }
    }

    /// The wire format Haply documents: `set_cursor_force.vector` in newtons under the
    /// device's `commands`; the session profile and the preset once, in the first message.
    #[test]
    fn commands_have_the_documented_shape() {
        let first: Value =
            serde_json::to_value(command(&inv(None), [0.5, 0.0, -1.5], true)).unwrap();
        let d = &first["inverse3"][0];
        assert_eq!(d["device_id"], "049D");
        assert_eq!(
            d["commands"]["set_cursor_force"]["vector"],
            json!({"x": 0.5, "y": 0.0, "z": -1.5})
        );
        assert_eq!(d["configure"]["preset"]["preset"], PRESET);
        assert_eq!(
            first["session"]["configure"]["profile"]["name"],
            PROFILE_NAME
        );
        let later: Value = serde_json::to_value(command(&inv(None), [0.0; 3], false)).unwrap();
        assert_eq!(
            later["session"],
            json!({}),
            "no full-state request, no configure"
        );
        assert!(later["inverse3"][0].get("configure").is_none());
    }

    fn merged(messages: &[Value]) -> ServiceData {
        runtime().unwrap().block_on(async {
            let state = empty_state();
            let mut first = true;
            for m in messages {
                merge(&state, m.to_string(), &mut first).await;
            }
            let data = state.lock().await.data.clone();
            data
        })
    }

    fn inverse3(config: bool, x: f64) -> Value {
        let mut d = json!({
            "device_id": "049D",
            "state": {"cursor_position": {"x": x, "y": -0.01, "z": 0.03}, "mode": "idle"},
            "status": {"calibrated": true, "in_use": true, "power_supply": true,
                       "ready": true, "started": true}
        });
        if config {
            d["config"] = json!({"type": "minverse", "port": "COM3",
                "device_info": {"id": "049D", "major_version": 7, "minor_version": 4,
                                "device_type": 6, "uuid": "u"},
                "extended_device_id": "e", "extended_firmware_version": "f",
                "gravity_compensation": {"enabled": true, "scaling_factor": 1.0},
                "handedness": "left", "torque_scaling": {"enabled": true}});
        }
        d
    }

    /// The inventory names the model and the grip; a later update without configuration
    /// moves the cursor; the grip's buttons a, b, c are bits 0, 1, 2 and its orientation
    /// (w, x, y, z) the handle's.
    #[test]
    fn samples_come_from_the_merged_state() {
        let grip = json!({"device_id": "1102",
            "state": {"buttons": {"a": false, "b": true, "c": true},
                      "orientation": {"w": 0.0, "x": 1.0, "y": 0.0, "z": 0.0}},
            "status": {"ready": true, "connected": true, "awake": true}});
        let mut grip_cfg = grip.clone();
        grip_cfg["config"] = json!({"type": "wireless_verse_grip", "port": "COM4",
            "major_version": 1, "minor_version": 0, "hardware_version": 1});
        let data = merged(&[
            json!({"session_id": 3, "inverse3": [inverse3(true, 0.01)],
                   "wireless_verse_grip": [grip_cfg]}),
            json!({"session_id": 3, "inverse3": [inverse3(false, 0.02)],
                   "wireless_verse_grip": [grip]}),
        ]);
        let found = inventory(&data).unwrap();
        assert_eq!(
            found,
            Inventory {
                device_id: "049D".into(),
                device_type: "minverse".into(),
                grip: Some("1102".into()),
            }
        );
        let s = sample_of(&data, &found, 7).unwrap();
        let expected = [7.0, 0.02, -0.01, 0.03, 0.0, 1.0, 0.0, 0.0, 6.0];
        for (a, b) in s.iter().zip(expected) {
            assert!((a - b).abs() < 1e-6, "{s:?}");
        }
        assert_eq!(device_info(&found).name, "Haply Minverse");
        // Unplugged: a later update lists no Inverse3.
        let gone = merged(&[
            json!({"inverse3": [inverse3(true, 0.0)]}),
            json!({"inverse3": []}),
        ]);
        assert!(sample_of(&gone, &inv(None), 1).is_none());
    }

    #[test]
    fn the_io_side_sends_zero_for_stale_torn_or_bad_wrenches() {
        let io = Io::new();
        io.max_force_n.store(2.0f64.to_bits(), Ordering::Release);
        assert_eq!(io.force_for(1), [0.0; 3], "nothing written yet");
        io.wrench.store(&[3.0, 4.0, 0.0, 5.0]);
        let f = io.force_for(6);
        assert!(
            (f[0] - 1.2).abs() < 1e-12 && (f[1] - 1.6).abs() < 1e-12,
            "clamped: {f:?}"
        );
        assert_ne!(io.force_for(5 + STALE_FRAMES), [0.0; 3]);
        assert_eq!(io.force_for(6 + STALE_FRAMES), [0.0; 3], "stale");
        io.wrench.store(&[f64::NAN, 0.0, 0.0, 5.0]);
        assert_eq!(io.force_for(6), [0.0; 3], "not finite");
        io.wrench.store(&[1.0, 0.0, 0.0, 5.0]);
        io.stop.store(true, Ordering::Release);
        assert_eq!(io.force_for(6), [0.0; 3], "stopping");
        io.set_fault(FAULT_CLOSED);
        io.set_fault(FAULT_TRANSPORT);
        assert_eq!(
            io.fault().unwrap().code,
            FAULT_CLOSED,
            "the first fault stays"
        );
        assert_eq!(
            io.fault().unwrap().to_string(),
            "Haply Inverse Service: the service closed the connection"
        );
    }
}

//! Transcript helpers for the engine tests: write a connection as a list of segments with
//! millisecond times, run it through the real flow table, read back events and flow columns.
#![allow(dead_code)]

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, Float64Type, Int64Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use hsrtcp_core::flow::{CaptureInfo, FlowTable, Output};
use hsrtcp_core::wire::{SackBlock, Segment, TcpFlags, TcpOptions};

pub const SYN: u16 = TcpFlags::SYN;
pub const SA: u16 = TcpFlags::SYN | TcpFlags::ACK;
pub const A: u16 = TcpFlags::ACK;
pub const FA: u16 = TcpFlags::FIN | TcpFlags::ACK;
pub const RA: u16 = TcpFlags::RST | TcpFlags::ACK;

pub const T0: i64 = 1_700_000_000_000_000_000;

/// A connection transcript: client 10.0.0.1:40000, server 10.0.0.2:80.
pub struct Tx {
    pub segs: Vec<Segment>,
    pub ip_id: [u16; 2],
    pub isn: [u32; 2],
    pub ts_on: bool,
}

impl Tx {
    pub fn new(client_isn: u32, server_isn: u32) -> Self {
        Tx {
            segs: Vec::new(),
            ip_id: [100, 5000],
            isn: [client_isn, server_isn],
            ts_on: false,
        }
    }

    /// Raw segment; `from_client` picks the direction. Relative seq/ack are turned into raw
    /// numbers from the ISNs (seq relative to the sender's ISN, ack to the receiver's).
    #[allow(clippy::too_many_arguments)]
    pub fn raw(
        &mut self,
        t_ms: f64,
        from_client: bool,
        flags: u16,
        seq: u32,
        ack: u32,
        len: u32,
        window: u16,
    ) -> &mut Segment {
        let (src, dst, sport, dport): ([u8; 4], [u8; 4], u16, u16) = if from_client {
            ([10, 0, 0, 1], [10, 0, 0, 2], 40000, 80)
        } else {
            ([10, 0, 0, 2], [10, 0, 0, 1], 80, 40000)
        };
        let side = if from_client { 0 } else { 1 };
        self.ip_id[side] = self.ip_id[side].wrapping_add(1);
        let mut options = TcpOptions::default();
        if self.ts_on {
            let tsval = (t_ms as u32).wrapping_add(if from_client { 1_000_000 } else { 5_000_000 });
            options.timestamp = Some((tsval, 0));
        }
        self.segs.push(Segment {
            ts: T0 + (t_ms * 1e6) as i64,
            src: src.into(),
            dst: dst.into(),
            sport,
            dport,
            seq: self.isn[side].wrapping_add(seq),
            ack: if flags & TcpFlags::ACK != 0 {
                self.isn[1 - side].wrapping_add(ack)
            } else {
                0
            },
            flags: TcpFlags(flags),
            window,
            payload_len: len,
            ip_id: Some(self.ip_id[side]),
            options,
            payload_truncated: false,
            outer: 0,
            frame: 0,
        });
        self.segs.last_mut().unwrap()
    }

    /// SYN, SYN-ACK, ACK at t, t+syn_gap, t+syn_gap+ack_gap (ms). Options: wscale, SACK, MSS.
    pub fn handshake(
        &mut self,
        t: f64,
        syn_gap: f64,
        ack_gap: f64,
        wscale: Option<(u8, u8)>,
        sack: bool,
    ) {
        let s = self.raw(t, true, SYN, 0, 0, 0, 64240);
        s.options.mss = Some(1460);
        s.options.sack_permitted = sack;
        s.options.wscale = wscale.map(|w| w.0);
        let s = self.raw(t + syn_gap, false, SA, 0, 1, 0, 65160);
        s.options.mss = Some(1000);
        s.options.sack_permitted = sack;
        s.options.wscale = wscale.map(|w| w.1);
        self.raw(t + syn_gap + ack_gap, true, A, 1, 1, 0, 502);
    }

    /// Server data segment (relative seq from 1, len bytes).
    pub fn data(&mut self, t: f64, seq: u32, len: u32) -> &mut Segment {
        self.raw(t, false, A, seq, 1, len, 509)
    }

    /// `n` server data segments of 1000 bytes from seq 1, 0.1 ms apart from `t`.
    pub fn burst(&mut self, t: f64, n: u32) {
        for k in 0..n {
            self.data(t + 0.1 * k as f64, 1 + 1000 * k, 1000);
        }
    }

    /// Client pure ACK of server data.
    pub fn ack(&mut self, t: f64, ack: u32) -> &mut Segment {
        self.raw(t, true, A, 1, ack, 0, 502)
    }

    /// Client ACK with SACK blocks (relative to the server ISN).
    pub fn sack(&mut self, t: f64, ack: u32, blocks: &[(u32, u32)]) -> &mut Segment {
        let isn = self.isn[1];
        let s = self.raw(t, true, A, 1, ack, 0, 502);
        for (k, (l, r)) in blocks.iter().enumerate() {
            s.options.sack[k] = SackBlock {
                left: isn.wrapping_add(*l),
                right: isn.wrapping_add(*r),
            };
        }
        s.options.sack_count = blocks.len() as u8;
        s
    }

    /// Set the TSecr of the last segment.
    pub fn echo(&mut self, tsecr_ms: f64, of_client: bool) {
        let v = tsecr_ms as u32 + if of_client { 1_000_000 } else { 5_000_000 };
        let s = self.segs.last_mut().unwrap();
        let tsval = s.options.timestamp.map(|t| t.0).unwrap_or(0);
        s.options.timestamp = Some((tsval, v));
    }

    /// Run through the real flow table (the vantage is inferred by the engine).
    pub fn run(&self) -> Res {
        self.run_with(None)
    }

    /// Run with the caller's word on the vantage ("client" / "server"), as
    /// `hsrtcp.analyze(..., vantage=...)` passes it.
    pub fn run_as(&self, vantage: &str) -> Res {
        self.run_with(Some(vantage))
    }

    fn run_with(&self, vantage: Option<&str>) -> Res {
        let mut t = FlowTable::new(CaptureInfo {
            name: "transcript".into(),
            vantage: vantage.map(str::to_string),
            ..Default::default()
        });
        let mut out = Output::default();
        for s in &self.segs {
            t.push(s);
        }
        t.finish(false, &mut out);
        Res {
            flows: out.flows.finish(),
            events: out.events.finish(),
            rtt: out.rtt.take_batch(),
            series: out.series.finish(),
        }
    }
}

pub struct Res {
    pub flows: RecordBatch,
    pub events: RecordBatch,
    pub rtt: RecordBatch,
    pub series: RecordBatch,
}

/// The column `name` of `b`, by name (a missing one panics, naming it).
fn column<'a>(b: &'a RecordBatch, name: &str) -> &'a dyn Array {
    b.column_by_name(name).unwrap_or_else(|| panic!("no column {name}")).as_ref()
}

/// Row `row` of a primitive column, None when null.
fn prim_at<T: ArrowPrimitiveType>(b: &RecordBatch, name: &str, row: usize) -> Option<T::Native> {
    let a = column(b, name).as_primitive::<T>();
    (!a.is_null(row)).then(|| a.value(row))
}

pub fn u64_at(b: &RecordBatch, name: &str, row: usize) -> Option<u64> {
    prim_at::<UInt64Type>(b, name, row)
}

pub fn f64_at(b: &RecordBatch, name: &str, row: usize) -> Option<f64> {
    prim_at::<Float64Type>(b, name, row)
}

pub fn i64_at(b: &RecordBatch, name: &str, row: usize) -> Option<i64> {
    prim_at::<Int64Type>(b, name, row)
}

pub fn str_at(b: &RecordBatch, name: &str, row: usize) -> Option<String> {
    let a = column(b, name).as_string::<i32>();
    (!a.is_null(row)).then(|| a.value(row).to_string())
}

pub fn bool_at(b: &RecordBatch, name: &str, row: usize) -> Option<bool> {
    let a = column(b, name).as_boolean();
    (!a.is_null(row)).then(|| a.value(row))
}

impl Res {
    pub fn flow_u64(&self, name: &str) -> Option<u64> {
        u64_at(&self.flows, name, 0)
    }
    pub fn flow_f64(&self, name: &str) -> Option<f64> {
        f64_at(&self.flows, name, 0)
    }
    pub fn flow_str(&self, name: &str) -> Option<String> {
        str_at(&self.flows, name, 0)
    }
    pub fn flow_bool(&self, name: &str) -> Option<bool> {
        bool_at(&self.flows, name, 0)
    }

    /// Events as "kind/class" strings in order of appearance, without the `gap` events
    /// (every silence >= 200 ms; they have their own tests, see [`Res::gaps`]) and the
    /// `sack_block` events (one per SACK block; tests in engine_sack_blocks.rs).
    pub fn kinds(&self) -> Vec<String> {
        (0..self.events.num_rows())
            .filter(|&i| {
                !matches!(str_at(&self.events, "kind", i).as_deref(), Some("gap" | "sack_block"))
            })
            .map(|i| {
                let k = str_at(&self.events, "kind", i).unwrap();
                match str_at(&self.events, "class", i) {
                    Some(c) => format!("{k}/{c}"),
                    None => k,
                }
            })
            .collect()
    }

    /// [`Res::kinds`] on one line, separated by spaces: a test's transcript of events.
    pub fn transcript(&self) -> String {
        self.kinds().join(" ")
    }

    /// `gap` events as (ts, ts_end, duration_s, class, value), in order.
    pub fn gaps(&self) -> Vec<(f64, f64, f64, String, f64)> {
        self.rows("gap")
            .into_iter()
            .map(|i| {
                (
                    f64_at(&self.events, "ts", i).unwrap(),
                    f64_at(&self.events, "ts_end", i).unwrap(),
                    f64_at(&self.events, "duration_s", i).unwrap(),
                    str_at(&self.events, "class", i).unwrap(),
                    f64_at(&self.events, "value", i).unwrap(),
                )
            })
            .collect()
    }

    /// Rows of events of a kind.
    pub fn rows(&self, kind: &str) -> Vec<usize> {
        (0..self.events.num_rows())
            .filter(|&i| str_at(&self.events, "kind", i).as_deref() == Some(kind))
            .collect()
    }

    /// RTT sample values (s) taken by one method (`rtt` table).
    pub fn rtts(&self, method: &str) -> Vec<f64> {
        (0..self.rtt.num_rows())
            .filter(|&i| str_at(&self.rtt, "method", i).as_deref() == Some(method))
            .map(|i| f64_at(&self.rtt, "rtt_s", i).unwrap())
            .collect()
    }
}

pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

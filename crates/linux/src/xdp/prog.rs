//! The XDP program that steers a port's frames to its AF_XDP socket or to the kernel
//! (`docs/afxdp.md` "Pieces" 2), assembled here from BPF instructions: the program is a few
//! dozen instructions, and compiling C to BPF would need clang, which neither this machine nor
//! CI has.
//!
//! The decision, in order (router ports; a switch port sends everything to the socket):
//!
//! 1. a frame shorter than an Ethernet header → the kernel;
//! 2. ARP → the kernel (which answers for the node's addresses; the node reads ARP from its
//!    ARP socket, which sees what XDP passes);
//! 3. MPLS unicast → the socket (switched paths, QSR §4.2);
//! 4. anything but IPv4 → the kernel;
//! 5. IPv4 with options (Router Alert) or protocol 46 (RSVP) → the kernel, where the port's
//!    control socket (bound to IPv4, filtered to these) hands them to the node (its RSVP
//!    engine, QSR §3.2) through a ring of their own: QSR §6.2's
//!    network-control channel at the ingress — data never fills it, and the node reads it first
//!    (the kernel, forwarding off, drops transit copies silently; with RSVP on, the router's
//!    daemon holds a sink socket for the copies addressed to it);
//! 6. IPv4 to multicast, to the limited broadcast, to one of the node's addresses or to the
//!    directed broadcast of one of its subnets → the kernel (OSPF, pings, the management API);
//! 7. everything else → the socket of the frame's receive queue.
//!
//! "The socket" is `bpf_redirect_map(xskmap, rx_queue_index, fallback)`: a queue without a
//! socket gets `fallback` (the kernel, in service; a distinct code in tests).
//!
//! The router's steering (1–6) and fast path are also assembled as a TC program for AF_PACKET
//! ports ([`tc_router_program`], docs/fastpath.md "The router on AF_PACKET"), where everything
//! the fast path does not take goes on to the kernel and the port's protocol sockets; so is the
//! switch's fast path ([`tc_switch_program`], docs/fastpath.md "The switch at TC, and
//! super-frames"). At TC both also forward TCP super-frames (GSO) whose segments fit.

use std::net::Ipv4Addr;

/// XDP verdicts.
pub const XDP_ABORTED: u32 = 0;
/// Drop the frame.
pub const XDP_DROP: u32 = 1;
/// Hand the frame to the kernel's stack.
pub const XDP_PASS: u32 = 2;
/// Redirected (to a socket).
pub const XDP_REDIRECT: u32 = 4;

/// TC verdicts (`<linux/pkt_cls.h>`): carry on (the kernel's stack and the protocol sockets).
pub const TC_ACT_OK: u32 = 0;
/// TC verdict: the frame leaves where `bpf_redirect` pointed.
pub const TC_ACT_REDIRECT: u32 = 7;

/// `bpf_redirect`: out of an interface, by index (the TC hook's redirect; XDP's is by map).
const HELPER_REDIRECT: i32 = 23;
/// `bpf_skb_load_bytes`: copies bytes of an skb, linear or not, to the stack.
const HELPER_SKB_LOAD_BYTES: i32 = 26;
/// `bpf_skb_pull_data`: makes the first bytes of an skb linear (directly readable).
const HELPER_SKB_PULL_DATA: i32 = 39;
/// `bpf_redirect_map` (include/uapi/linux/bpf.h, `__BPF_FUNC_MAPPER`).
const HELPER_REDIRECT_MAP: i32 = 51;
/// `bpf_map_lookup_elem`.
const HELPER_MAP_LOOKUP: i32 = 1;
/// `bpf_xdp_get_buff_len`: the frame's length (no pointer arithmetic, which the verifier allows
/// only with `CAP_PERFMON`).
const HELPER_XDP_BUFF_LEN: i32 = 188;
/// `BPF_PSEUDO_MAP_FD`: the immediate of a 64-bit load is a map descriptor.
const PSEUDO_MAP_FD: u8 = 1;

/// One BPF instruction (`struct bpf_insn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    /// Opcode.
    pub code: u8,
    /// Destination register (low nibble) and source register (high nibble).
    pub regs: u8,
    /// Offset.
    pub off: i16,
    /// Immediate.
    pub imm: i32,
}

impl Insn {
    const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        Insn {
            code,
            regs: (src << 4) | (dst & 0x0f),
            off,
            imm,
        }
    }

    /// The 8 bytes the kernel reads.
    pub fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = self.regs;
        b[2..4].copy_from_slice(&self.off.to_le_bytes());
        b[4..8].copy_from_slice(&self.imm.to_le_bytes());
        b
    }
}

// Opcode parts (include/uapi/linux/bpf_common.h, bpf.h).
const LDX_MEM_W: u8 = 0x61; // BPF_LDX | BPF_MEM | BPF_W
const LDX_MEM_H: u8 = 0x69; // BPF_LDX | BPF_MEM | BPF_H
const LDX_MEM_B: u8 = 0x71; // BPF_LDX | BPF_MEM | BPF_B
const ALU64_MOV_X: u8 = 0xbf;
const ALU64_MOV_K: u8 = 0xb7;
const ALU64_ADD_K: u8 = 0x07;
const ALU64_AND_K: u8 = 0x57;
const LDX_MEM_DW: u8 = 0x79;
const STX_MEM_W: u8 = 0x63;
const STX_MEM_H: u8 = 0x6b;
const STX_MEM_DW: u8 = 0x7b;
const ST_MEM_H: u8 = 0x6a;
const ST_MEM_W: u8 = 0x62;
const ST_MEM_DW: u8 = 0x7a;
/// `BPF_STX | BPF_ATOMIC | BPF_DW` with `imm = BPF_ADD`: `lock *(u64 *)(dst + off) += src`.
const ATOMIC_ADD_DW: u8 = 0xdb;
const JMP_JEQ_K: u8 = 0x15;
const JMP_JGT_X: u8 = 0x2d;
const JMP32_JEQ_K: u8 = 0x16;
const JMP32_JNE_K: u8 = 0x56;
const JMP_JA: u8 = 0x05;
const JMP_CALL: u8 = 0x85;
const JMP_EXIT: u8 = 0x95;
const LD_IMM64: u8 = 0x18;
const ALU64_ADD_X: u8 = 0x0f;
const ALU64_RSH_K: u8 = 0x77;
const ALU64_LSH_K: u8 = 0x67;
const ALU64_SUB_K: u8 = 0x17;
const ALU64_SUB_X: u8 = 0x1f;
const ALU64_MUL_X: u8 = 0x2f;
const ALU64_DIV_X: u8 = 0x3f;
/// `BPF_ALU | BPF_MOV | BPF_X`: the low 32 bits, the upper ones cleared.
const ALU32_MOV_X: u8 = 0xbc;
/// `BPF_ALU | BPF_END | BPF_TO_BE`: to network order (a swap on this little-endian machine).
const ALU_TO_BE: u8 = 0xdc;
const STX_MEM_B: u8 = 0x73;
const JMP_JGT_K: u8 = 0x25;
const JMP_JGE_K: u8 = 0x35;
const JMP_JLT_K: u8 = 0xa5;
const JMP_JLE_K: u8 = 0xb5;
const JMP_JLE_X: u8 = 0xbd;
const JMP_JNE_K: u8 = 0x55;

/// Which frames a port keeps for itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Steering {
    /// A switch port: every frame to the socket.
    Everything,
    /// A switch port with the best-effort fast path (docs/fastpath.md): frames between two open
    /// ports, both stations learnt, are redirected to the output port; every other frame to the
    /// socket.
    Switch(FastPathProg),
    /// A router port: the kernel keeps ARP, non-IP, and IPv4 for the node itself (module doc).
    Router {
        /// The node's addresses and their prefix lengths (for directed broadcasts).
        addresses: Vec<(Ipv4Addr, u8)>,
        /// The router's best-effort fast path (docs/fastpath.md "The router"), if on.
        fast: Option<RouterFastProg>,
    },
}

/// What one router port's fast-path program needs: its index and MAC and the router's shared
/// maps (docs/fastpath.md "The router").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouterFastProg {
    /// This port's index in the router.
    pub port: u32,
    /// This port's MAC: only frames to it are routed.
    pub mac: [u8; 6],
    /// Longest frame forwarded, bytes (longer ones go to the router).
    pub max_frame: u32,
    /// The `fib` longest-prefix-match trie: (32, IPv4 destination) → (output port or
    /// `TO_CORE`, next hop's MAC, output port's MAC).
    pub fib_fd: i32,
    /// The `open` array: port index → 1 if open.
    pub open_fd: i32,
    /// The `tx` device map: port index → ifindex.
    pub tx_fd: i32,
    /// The `fast` array: port index → (frames, bytes) forwarded by XDP from that port.
    pub stats_fd: i32,
}

/// What one port's fast-path program needs: its own index and the switch's shared maps
/// (docs/fastpath.md "Maps").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastPathProg {
    /// This port's index in the switch.
    pub port: u32,
    /// Longest frame forwarded, bytes (longer ones go to the switch, which drops them).
    pub max_frame: u32,
    /// The `fdb` hash map: MAC (8 bytes) → port index.
    pub fdb_fd: i32,
    /// The `open` array: port index → 1 if open.
    pub open_fd: i32,
    /// The `tx` device map: port index → ifindex.
    pub tx_fd: i32,
    /// The `fast` array: port index → (frames, bytes) forwarded by XDP from that port.
    pub stats_fd: i32,
}

/// A jump target, resolved when the program is assembled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
    Pass,
    Redirect,
    /// The fast path: after a frame's EtherType is found to be IP.
    Ip,
    /// The fast path: redirected to the output port.
    Done,
    /// The TC program: the headers are linear.
    Linear,
    /// The TC length check: not a super-frame whose segments fit; the frame's own length
    /// decides.
    Plain,
    /// The TC length check: passed (a short frame, or a super-frame whose segments fit).
    Fits,
    /// The TC length check: the super-frame's segment count is known.
    Segs,
    /// The TC length check of the switch: an IPv4 super-frame.
    GsoV4,
    /// The TC length check: the IP header's length is known, the TCP header's next.
    GsoTcp,
}

/// The hook a router's fast path runs in: where its context keeps the frame, how it measures
/// and redirects it, and what "forwarded" returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hook {
    /// XDP (`struct xdp_md`): on an AF_XDP port.
    Xdp,
    /// TC ingress (`struct __sk_buff`, attached by tcx): on an AF_PACKET port.
    Tc,
}

impl Hook {
    /// Offsets of `data` and `data_end` in the context.
    fn data(self) -> (i16, i16) {
        match self {
            Hook::Xdp => (0, 4),
            Hook::Tc => (76, 80),
        }
    }

    /// The verdict of a forwarded frame.
    fn forwarded(self) -> u32 {
        match self {
            Hook::Xdp => XDP_REDIRECT,
            Hook::Tc => TC_ACT_REDIRECT,
        }
    }
}

// Offsets of the fields of `struct __sk_buff` (include/uapi/linux/bpf.h) the TC programs read.
/// The frame's length, Ethernet header, pages and all.
const SKB_LEN: i16 = 0;
/// 1 when the kernel has moved an 802.1Q tag out of the frame into the skb's metadata.
const SKB_VLAN_PRESENT: i16 = 20;
/// `skb_shinfo(skb)->gso_segs`: how many segments a super-frame becomes.
const SKB_GSO_SEGS: i16 = 164;
/// `skb_shinfo(skb)->gso_size`: the payload of each segment (0: not a super-frame).
const SKB_GSO_SIZE: i16 = 176;

/// Which headers a TC program's super-frame check finds the TCP header behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GsoHeaders {
    /// The router's: IPv4 without options (the steering has made sure), its first 34 bytes
    /// linear.
    Ipv4Plain,
    /// The switch's: IPv4 with any header length, or IPv6 with TCP as its next header; only
    /// the Ethernet header is known to be linear.
    Ip,
}

/// The program, built with symbolic jumps.
#[derive(Default)]
struct Builder {
    insns: Vec<Insn>,
    /// (instruction index, target) of each jump to resolve.
    jumps: Vec<(usize, Label)>,
    labels: Vec<(Label, usize)>,
}

impl Builder {
    fn push(&mut self, insn: Insn) {
        self.insns.push(insn);
    }

    fn jump(&mut self, code: u8, dst: u8, src: u8, imm: i32, to: Label) {
        self.jumps.push((self.insns.len(), to));
        self.insns.push(Insn::new(code, dst, src, 0, imm));
    }

    /// `dst = map` (a two-slot 64-bit load of a map descriptor).
    fn load_map(&mut self, dst: u8, map_fd: i32) {
        self.push(Insn::new(LD_IMM64, dst, PSEUDO_MAP_FD, 0, map_fd));
        self.push(Insn::new(0, 0, 0, 0, 0));
    }

    /// `r0 = bpf_map_lookup_elem(map, r10 + key_at)`; jumps to `miss` when absent.
    fn lookup(&mut self, map_fd: i32, key_at: i16, miss: Label) {
        self.load_map(1, map_fd);
        self.push(Insn::new(ALU64_MOV_X, 2, 10, 0, 0));
        self.push(Insn::new(ALU64_ADD_K, 2, 0, 0, i32::from(key_at)));
        self.push(Insn::new(JMP_CALL, 0, 0, 0, HELPER_MAP_LOOKUP));
        self.jump(JMP_JEQ_K, 0, 0, 0, miss);
    }

    fn label(&mut self, l: Label) {
        self.labels.push((l, self.insns.len()));
    }

    fn finish(mut self) -> Vec<Insn> {
        for (at, to) in &self.jumps {
            let target = self
                .labels
                .iter()
                .find(|(l, _)| l == to)
                .map(|(_, i)| *i)
                .expect("every label is placed");
            let off = target as i64 - *at as i64 - 1;
            self.insns[*at].off = i16::try_from(off).expect("programs are short");
        }
        self.insns
    }
}

/// An IPv4 address as a BPF word loaded from the packet (network byte order read as a
/// little-endian `u32`), for a 32-bit compare.
fn word(addr: Ipv4Addr) -> i32 {
    u32::from_le_bytes(addr.octets()) as i32
}

/// The steering program for `steering`, with `map_fd` the XSKMAP and `fallback` what a queue
/// without a socket gets.
pub fn program(steering: &Steering, map_fd: i32, fallback: u32) -> Vec<Insn> {
    // Registers: r6 = ctx, r2 = data, r3 = data_end, r4 scratch pointer, r5 scratch value.
    let mut b = Builder::default();
    b.push(Insn::new(ALU64_MOV_X, 6, 1, 0, 0));
    if let Steering::Router { addresses, fast } = steering {
        router_steering(&mut b, addresses, Hook::Xdp);
        match fast {
            Some(fast) => router_fast_path(&mut b, fast, addresses, Hook::Xdp),
            None => b.jump(JMP_JA, 0, 0, 0, Label::Redirect),
        }
        b.label(Label::Pass);
        b.push(Insn::new(ALU64_MOV_K, 0, 0, 0, XDP_PASS as i32));
        b.push(Insn::new(JMP_EXIT, 0, 0, 0, 0));
    }
    if let Steering::Switch(fast) = steering {
        fast_path(&mut b, fast, Hook::Xdp);
    }
    b.label(Label::Redirect);
    b.push(Insn::new(LDX_MEM_W, 2, 6, 16, 0)); // rx_queue_index
    b.push(Insn::new(LD_IMM64, 1, PSEUDO_MAP_FD, 0, map_fd));
    b.push(Insn::new(0, 0, 0, 0, 0));
    b.push(Insn::new(ALU64_MOV_K, 3, 0, 0, fallback as i32));
    b.push(Insn::new(JMP_CALL, 0, 0, 0, HELPER_REDIRECT_MAP));
    b.push(Insn::new(JMP_EXIT, 0, 0, 0, 0));
    if !matches!(steering, Steering::Router { .. }) {
        // No Pass label is used; place it for the assembler all the same.
        b.label(Label::Pass);
    }
    b.finish()
}

/// The router's steering (module doc, 1–6): the kernel's and the control plane's frames to
/// `Label::Pass`, MPLS to `Label::Redirect`; plain IPv4 for others falls through. Registers:
/// r6 = ctx, r2 = data, r3 = data_end, r4 scratch pointer, r5 scratch value.
fn router_steering(b: &mut Builder, addresses: &[(Ipv4Addr, u8)], hook: Hook) {
    let (data, data_end) = hook.data();
    b.push(Insn::new(LDX_MEM_W, 2, 6, data, 0));
    b.push(Insn::new(LDX_MEM_W, 3, 6, data_end, 0));
    b.push(Insn::new(ALU64_MOV_X, 4, 2, 0, 0));
    b.push(Insn::new(ALU64_ADD_K, 4, 0, 0, 14));
    b.jump(JMP_JGT_X, 4, 3, 0, Label::Pass); // shorter than Ethernet
    b.push(Insn::new(LDX_MEM_H, 5, 2, 12, 0)); // EtherType, bytes swapped
    b.jump(JMP32_JEQ_K, 5, 0, 0x0608, Label::Pass); // ARP
    b.jump(JMP32_JEQ_K, 5, 0, 0x4788, Label::Redirect); // MPLS unicast
    b.jump(JMP32_JNE_K, 5, 0, 0x0008, Label::Pass); // not IPv4
    b.push(Insn::new(ALU64_MOV_X, 4, 2, 0, 0));
    b.push(Insn::new(ALU64_ADD_K, 4, 0, 0, 34));
    b.jump(JMP_JGT_X, 4, 3, 0, Label::Pass); // shorter than an IPv4 header
    b.push(Insn::new(LDX_MEM_B, 5, 2, 14, 0)); // version and IHL
    b.push(Insn::new(ALU64_AND_K, 5, 0, 0, 0x0f));
    b.jump(JMP32_JNE_K, 5, 0, 5, Label::Pass); // options: Router Alert and others
    b.push(Insn::new(LDX_MEM_B, 5, 2, 23, 0)); // protocol
    b.jump(JMP32_JEQ_K, 5, 0, 46, Label::Pass); // RSVP
    b.push(Insn::new(LDX_MEM_W, 5, 2, 30, 0)); // destination
    b.push(Insn::new(ALU64_MOV_X, 4, 5, 0, 0));
    b.push(Insn::new(ALU64_AND_K, 4, 0, 0, 0xf0)); // first octet's high nibble
    b.jump(JMP32_JEQ_K, 4, 0, 0xe0, Label::Pass); // multicast
    b.jump(JMP32_JEQ_K, 5, 0, -1, Label::Pass); // 255.255.255.255
    for (addr, len) in addresses {
        b.jump(JMP32_JEQ_K, 5, 0, word(*addr), Label::Pass);
        if *len < 31 {
            let host = u32::MAX >> len;
            let broadcast = Ipv4Addr::from(u32::from(*addr) | host);
            b.jump(JMP32_JEQ_K, 5, 0, word(broadcast), Label::Pass);
        }
    }
}

/// The router's TC program for an AF_PACKET port (docs/fastpath.md "The router on AF_PACKET"):
/// the steering's checks and the fast path of [`program`], at the TC ingress hook instead of
/// XDP, where the kernel hands the program its own skb — on a veth, XDP must first copy every
/// frame from a sender without XDP into a page of its own, TC does not. Every frame the fast
/// path does not take gets `TC_ACT_OK`: on to the kernel and to the port's protocol sockets,
/// which the kernel serves after this hook ([`crate::xdp::TcPacketPort`]).
pub fn tc_router_program(fast: &RouterFastProg, addresses: &[(Ipv4Addr, u8)]) -> Vec<Insn> {
    let mut b = Builder::default();
    b.push(Insn::new(ALU64_MOV_X, 6, 1, 0, 0));
    // The Ethernet and IPv4 headers linear (a sender's skb may hold them in pages).
    tc_linear(&mut b, 34);
    router_steering(&mut b, addresses, Hook::Tc);
    router_fast_path(&mut b, fast, addresses, Hook::Tc);
    tc_carry_on(b)
}

/// The switch's TC program for an AF_PACKET port (docs/fastpath.md "The switch at TC, and
/// super-frames"): the fast path's rule of [`program`] ("The rule"), at the TC ingress hook on
/// the kernel's own skb. A frame the rule forwards leaves by `bpf_redirect` to the output
/// port's interface (read from the `tx` device map) and the program returns
/// `TC_ACT_REDIRECT`; every other frame gets `TC_ACT_OK`: on to the kernel and to the port's
/// packet sockets. Unlike XDP, it also forwards a TCP super-frame (GSO) longer than
/// `max_frame` whose every segment fits in `max_frame`, whole: the output segments it.
pub fn tc_switch_program(fast: &FastPathProg) -> Vec<Insn> {
    let mut b = Builder::default();
    b.push(Insn::new(ALU64_MOV_X, 6, 1, 0, 0));
    // The Ethernet header linear (a sender's skb may hold it in pages).
    tc_linear(&mut b, 14);
    fast_path(&mut b, fast, Hook::Tc);
    tc_carry_on(b)
}

/// A TC program's start: its first `bytes` bytes made linear with `bpf_skb_pull_data` when they
/// are not (a pull that fails, on a shorter frame, leaves the checks after it to fail).
/// Registers: r6 = ctx.
fn tc_linear(b: &mut Builder, bytes: i32) {
    let (data, data_end) = Hook::Tc.data();
    b.push(Insn::new(LDX_MEM_W, 2, 6, data, 0));
    b.push(Insn::new(LDX_MEM_W, 3, 6, data_end, 0));
    b.push(Insn::new(ALU64_ADD_K, 2, 0, 0, bytes));
    b.jump(JMP_JLE_X, 2, 3, 0, Label::Linear);
    b.push(Insn::new(ALU64_MOV_X, 1, 6, 0, 0));
    b.push(Insn::new(ALU64_MOV_K, 2, 0, 0, bytes));
    b.push(Insn::new(JMP_CALL, 0, 0, 0, HELPER_SKB_PULL_DATA));
    b.label(Label::Linear);
}

/// A TC program's end: every frame not forwarded goes on (`TC_ACT_OK`).
fn tc_carry_on(mut b: Builder) -> Vec<Insn> {
    b.label(Label::Pass);
    b.label(Label::Redirect);
    b.push(Insn::new(ALU64_MOV_K, 0, 0, 0, TC_ACT_OK as i32));
    b.push(Insn::new(JMP_EXIT, 0, 0, 0, 0));
    b.finish()
}

/// The TC programs' length check, with super-frames (docs/fastpath.md "The switch at TC, and
/// super-frames"): a frame of at most `max_frame` bytes passes, as at XDP; a longer one only
/// if it is a TCP super-frame (`gso_size` set) whose every segment — Ethernet, IP and TCP
/// headers and `gso_size` bytes — fits in `max_frame`; anything else to `Label::Redirect`. It
/// leaves on the stack what the frame will be on the wire, for the counters: at r10-24 the
/// bytes, at r10-32 the frames — for a super-frame whose segments fit (of any length), its
/// segments (`gso_segs`, or counted from its length when the kernel has not: a frame from a
/// guest) and its length plus the headers each further segment repeats; for any other frame,
/// 1 and its length. The headers beyond the linear ones are read with `bpf_skb_load_bytes`
/// into r10-48 (10 bytes). Registers: r6 = ctx, r7 = data and r8 = data_end kept; r0–r5 and r9
/// (the IP, then all the headers' length) used.
fn tc_length(b: &mut Builder, max_frame: u32, headers: GsoHeaders) {
    let max = max_frame as i32;
    b.push(Insn::new(LDX_MEM_W, 0, 6, SKB_LEN, 0));
    b.push(Insn::new(STX_MEM_DW, 10, 0, -24, 0));
    b.push(Insn::new(ST_MEM_DW, 10, 0, -32, 1));
    b.push(Insn::new(LDX_MEM_W, 2, 6, SKB_GSO_SIZE, 0));
    b.jump(JMP_JEQ_K, 2, 0, 0, Label::Plain); // not a super-frame
    match headers {
        GsoHeaders::Ipv4Plain => {
            b.push(Insn::new(LDX_MEM_B, 2, 7, 23, 0)); // protocol
            b.jump(JMP32_JNE_K, 2, 0, 6, Label::Plain); // not TCP
            b.push(Insn::new(ALU64_MOV_K, 9, 0, 0, 20));
        }
        GsoHeaders::Ip => {
            // The IP header's first 10 bytes: version and IHL, IPv6's next header (6),
            // IPv4's protocol (9).
            skb_load_bytes(b, None, 14, 10);
            b.jump(JMP_JNE_K, 0, 0, 0, Label::Plain); // shorter
            b.push(Insn::new(LDX_MEM_H, 2, 7, 12, 0)); // EtherType, bytes swapped
            b.jump(JMP32_JEQ_K, 2, 0, 0x0008, Label::GsoV4);
            b.jump(JMP32_JNE_K, 2, 0, 0xdd86u16 as i32, Label::Plain); // neither IPv4 nor IPv6
            b.push(Insn::new(LDX_MEM_B, 2, 10, -48 + 6, 0)); // next header
            b.jump(JMP32_JNE_K, 2, 0, 6, Label::Plain); // not TCP (or behind an extension)
            b.push(Insn::new(ALU64_MOV_K, 9, 0, 0, 40));
            b.jump(JMP_JA, 0, 0, 0, Label::GsoTcp);
            b.label(Label::GsoV4);
            b.push(Insn::new(LDX_MEM_B, 2, 10, -48 + 9, 0)); // protocol
            b.jump(JMP32_JNE_K, 2, 0, 6, Label::Plain); // not TCP: UDP GSO and others
            b.push(Insn::new(LDX_MEM_B, 9, 10, -48, 0));
            b.push(Insn::new(ALU64_AND_K, 9, 0, 0, 0x0f));
            b.push(Insn::new(ALU64_LSH_K, 9, 0, 0, 2)); // IHL × 4
            b.label(Label::GsoTcp);
        }
    }
    // The TCP header's length: its data offset (the high nibble of byte 12) × 4.
    skb_load_bytes(b, Some(9), 14 + 12, 1);
    b.jump(JMP_JNE_K, 0, 0, 0, Label::Plain);
    b.push(Insn::new(LDX_MEM_B, 2, 10, -48, 0));
    b.push(Insn::new(ALU64_RSH_K, 2, 0, 0, 4));
    b.push(Insn::new(ALU64_LSH_K, 2, 0, 0, 2));
    b.push(Insn::new(ALU64_ADD_X, 9, 2, 0, 0));
    b.push(Insn::new(ALU64_ADD_K, 9, 0, 0, 14)); // r9: every segment's headers

    // Each segment fits, and there is payload past the headers.
    b.push(Insn::new(LDX_MEM_W, 2, 6, SKB_GSO_SIZE, 0));
    b.push(Insn::new(ALU64_ADD_X, 2, 9, 0, 0));
    b.jump(JMP_JGT_K, 2, 0, max, Label::Plain);
    b.push(Insn::new(LDX_MEM_DW, 3, 10, -24, 0)); // length
    b.jump(JMP_JLE_X, 3, 9, 0, Label::Plain);
    // Frames: gso_segs, or ⌈payload / gso_size⌉ when the kernel has not counted them.
    b.push(Insn::new(LDX_MEM_W, 2, 6, SKB_GSO_SEGS, 0));
    b.jump(JMP_JNE_K, 2, 0, 0, Label::Segs);
    b.push(Insn::new(LDX_MEM_W, 4, 6, SKB_GSO_SIZE, 0));
    b.push(Insn::new(ALU64_MOV_X, 2, 3, 0, 0));
    b.push(Insn::new(ALU64_SUB_X, 2, 9, 0, 0));
    b.push(Insn::new(ALU64_ADD_X, 2, 4, 0, 0));
    b.push(Insn::new(ALU64_SUB_K, 2, 0, 0, 1));
    b.push(Insn::new(ALU64_DIV_X, 2, 4, 0, 0));
    b.label(Label::Segs);
    b.push(Insn::new(STX_MEM_DW, 10, 2, -32, 0));
    // Bytes: the length, and the headers again for every segment after the first.
    b.push(Insn::new(ALU64_SUB_K, 2, 0, 0, 1));
    b.push(Insn::new(ALU64_MUL_X, 2, 9, 0, 0));
    b.push(Insn::new(ALU64_ADD_X, 3, 2, 0, 0));
    b.push(Insn::new(STX_MEM_DW, 10, 3, -24, 0));
    b.jump(JMP_JA, 0, 0, 0, Label::Fits);
    b.label(Label::Plain);
    b.push(Insn::new(LDX_MEM_DW, 0, 10, -24, 0));
    b.jump(JMP_JGT_K, 0, 0, max, Label::Redirect); // longer than max_frame
    b.label(Label::Fits);
}

/// `r0 = bpf_skb_load_bytes(skb, offset, r10 - 48, len)`, with `offset` the constant `at`, or
/// register `base` plus `at`. Registers: r6 = ctx.
fn skb_load_bytes(b: &mut Builder, base: Option<u8>, at: i32, len: i32) {
    b.push(Insn::new(ALU64_MOV_X, 1, 6, 0, 0));
    match base {
        Some(reg) => {
            b.push(Insn::new(ALU64_MOV_X, 2, reg, 0, 0));
            b.push(Insn::new(ALU64_ADD_K, 2, 0, 0, at));
        }
        None => b.push(Insn::new(ALU64_MOV_K, 2, 0, 0, at)),
    }
    b.push(Insn::new(ALU64_MOV_X, 3, 10, 0, 0));
    b.push(Insn::new(ALU64_ADD_K, 3, 0, 0, -48));
    b.push(Insn::new(ALU64_MOV_K, 4, 0, 0, len));
    b.push(Insn::new(JMP_CALL, 0, 0, 0, HELPER_SKB_LOAD_BYTES));
}

/// The fast path's decision (docs/fastpath.md "The rule"), in XDP or at TC, falling through to
/// the socket (`Label::Redirect`; at TC, on to the kernel) whenever a condition fails. At TC the
/// frame must also be untagged in the skb's metadata (the kernel moves an 802.1Q tag there
/// before the hook, so the EtherType alone does not show it), and a TCP super-frame longer than
/// `max_frame` passes the length check if its segments fit ([`tc_length`]). Registers: r6 =
/// ctx, r7 = data, r8 = data_end, r9 = output port; stack: r10-8 a MAC key (8 bytes), r10-12 a
/// port key, r10-24 the bytes to count, r10-32 (TC) the frames to count.
fn fast_path(b: &mut Builder, fast: &FastPathProg, hook: Hook) {
    let port = fast.port as i32;
    let (data, data_end) = hook.data();
    b.push(Insn::new(LDX_MEM_W, 7, 6, data, 0));
    b.push(Insn::new(LDX_MEM_W, 8, 6, data_end, 0));
    b.push(Insn::new(ALU64_MOV_X, 2, 7, 0, 0));
    b.push(Insn::new(ALU64_ADD_K, 2, 0, 0, 14));
    b.jump(JMP_JGT_X, 2, 8, 0, Label::Redirect); // shorter than Ethernet
    match hook {
        Hook::Xdp => {
            b.push(Insn::new(ALU64_MOV_X, 2, 7, 0, 0));
            b.push(Insn::new(ALU64_ADD_K, 2, 0, 0, fast.max_frame as i32));
            b.jump(JMP_JGT_X, 8, 2, 0, Label::Redirect); // longer than max_frame
        }
        Hook::Tc => {
            b.push(Insn::new(LDX_MEM_W, 2, 6, SKB_VLAN_PRESENT, 0));
            b.jump(JMP32_JNE_K, 2, 0, 0, Label::Redirect); // tagged
            tc_length(b, fast.max_frame, GsoHeaders::Ip);
        }
    }
    b.push(Insn::new(LDX_MEM_H, 2, 7, 12, 0)); // EtherType, bytes swapped
    b.jump(JMP32_JEQ_K, 2, 0, 0x0008, Label::Ip); // IPv4
    b.jump(JMP32_JNE_K, 2, 0, 0xdd86u16 as i32, Label::Redirect); // neither IPv4 nor IPv6
    b.label(Label::Ip);
    b.push(Insn::new(LDX_MEM_B, 2, 7, 0, 0));
    b.push(Insn::new(ALU64_AND_K, 2, 0, 0, 1));
    b.jump(JMP32_JNE_K, 2, 0, 0, Label::Redirect); // group destination

    // The source, learnt on this port.
    b.push(Insn::new(LDX_MEM_W, 2, 7, 6, 0));
    b.push(Insn::new(STX_MEM_W, 10, 2, -8, 0));
    b.push(Insn::new(LDX_MEM_H, 2, 7, 10, 0));
    b.push(Insn::new(STX_MEM_H, 10, 2, -4, 0));
    b.push(Insn::new(ST_MEM_H, 10, 0, -2, 0));
    b.lookup(fast.fdb_fd, -8, Label::Redirect);
    b.push(Insn::new(LDX_MEM_W, 2, 0, 0, 0));
    b.jump(JMP32_JNE_K, 2, 0, port, Label::Redirect);
    // The destination, learnt on another port.
    b.push(Insn::new(LDX_MEM_W, 2, 7, 0, 0));
    b.push(Insn::new(STX_MEM_W, 10, 2, -8, 0));
    b.push(Insn::new(LDX_MEM_H, 2, 7, 4, 0));
    b.push(Insn::new(STX_MEM_H, 10, 2, -4, 0));
    b.lookup(fast.fdb_fd, -8, Label::Redirect);
    b.push(Insn::new(LDX_MEM_W, 9, 0, 0, 0));
    b.jump(JMP32_JEQ_K, 9, 0, port, Label::Redirect);
    both_open(b, fast.open_fd, port);
    // Out by the device map; a port missing from it falls back to the socket.
    let frames_at = match hook {
        Hook::Xdp => {
            // The frame's length, for the counters.
            b.push(Insn::new(ALU64_MOV_X, 1, 6, 0, 0));
            b.push(Insn::new(JMP_CALL, 0, 0, 0, HELPER_XDP_BUFF_LEN));
            b.push(Insn::new(STX_MEM_DW, 10, 0, -24, 0));
            redirect_out(b, fast.tx_fd);
            None
        }
        Hook::Tc => {
            tc_redirect_out(b, fast.tx_fd);
            Some(-32)
        }
    };
    count_and_redirect(b, fast.stats_fd, port, -24, frames_at, hook.forwarded());
}

/// Falls through only if output port r9 and input port `port` are both open in the `open`
/// array; otherwise to the socket.
fn both_open(b: &mut Builder, open_fd: i32, port: i32) {
    b.push(Insn::new(STX_MEM_W, 10, 9, -12, 0));
    b.lookup(open_fd, -12, Label::Redirect);
    b.push(Insn::new(LDX_MEM_W, 2, 0, 0, 0));
    b.jump(JMP32_JEQ_K, 2, 0, 0, Label::Redirect);
    b.push(Insn::new(ST_MEM_W, 10, 0, -12, port));
    b.lookup(open_fd, -12, Label::Redirect);
    b.push(Insn::new(LDX_MEM_W, 2, 0, 0, 0));
    b.jump(JMP32_JEQ_K, 2, 0, 0, Label::Redirect);
}

/// `bpf_redirect_map(tx, r9, 0)`: the frame leaves by output port r9 once the program returns
/// `XDP_REDIRECT`; a port missing from the device map falls back to the socket.
fn redirect_out(b: &mut Builder, tx_fd: i32) {
    b.load_map(1, tx_fd);
    b.push(Insn::new(ALU64_MOV_X, 2, 9, 0, 0));
    b.push(Insn::new(ALU64_MOV_K, 3, 0, 0, 0));
    b.push(Insn::new(JMP_CALL, 0, 0, 0, HELPER_REDIRECT_MAP));
    b.jump(JMP32_JNE_K, 0, 0, XDP_REDIRECT as i32, Label::Redirect);
}

/// `bpf_redirect(tx[r9], 0)`, the TC hook's [`redirect_out`]: the device map is read for the
/// output's interface index; a port missing from it falls back to the socket.
fn tc_redirect_out(b: &mut Builder, tx_fd: i32) {
    b.push(Insn::new(STX_MEM_W, 10, 9, -12, 0));
    b.lookup(tx_fd, -12, Label::Redirect);
    b.push(Insn::new(LDX_MEM_W, 1, 0, 0, 0));
    b.push(Insn::new(ALU64_MOV_K, 2, 0, 0, 0));
    b.push(Insn::new(JMP_CALL, 0, 0, 0, HELPER_REDIRECT));
    b.jump(JMP32_JNE_K, 0, 0, TC_ACT_REDIRECT as i32, Label::Redirect);
}

/// Counts the frame on input port `port` in the `fast` array (frames: 1, or the count saved at
/// `r10 + frames_at`; bytes: the count saved at `r10 + len_at`) and returns `verdict` (the
/// hook's "redirected").
fn count_and_redirect(
    b: &mut Builder,
    stats_fd: i32,
    port: i32,
    len_at: i16,
    frames_at: Option<i16>,
    verdict: u32,
) {
    b.push(Insn::new(ST_MEM_W, 10, 0, -12, port));
    b.lookup(stats_fd, -12, Label::Done);
    match frames_at {
        Some(at) => b.push(Insn::new(LDX_MEM_DW, 1, 10, at, 0)),
        None => b.push(Insn::new(ALU64_MOV_K, 1, 0, 0, 1)),
    }
    b.push(Insn::new(ATOMIC_ADD_DW, 0, 1, 0, 0));
    b.push(Insn::new(LDX_MEM_DW, 1, 10, len_at, 0));
    b.push(Insn::new(ATOMIC_ADD_DW, 0, 1, 8, 0));
    b.label(Label::Done);
    b.push(Insn::new(ALU64_MOV_K, 0, 0, 0, verdict as i32));
    b.push(Insn::new(JMP_EXIT, 0, 0, 0, 0));
}

/// The router's fast path (docs/fastpath.md "The router"), after the steering program has
/// sent the kernel's and the control plane's packets on (module doc, 1–6): a plain IPv4 packet
/// to this port's MAC, with a valid header checksum, a TTL above 1, a source and destination a
/// router forwards (RFC 1812 §5.3.7) and its whole length in the frame, whose destination's
/// longest match in `fib` is a resolved next hop, between two open ports, is forwarded here —
/// MACs rewritten, TTL decremented with the incremental checksum update of RFC 1624 (as the
/// kernel's `ip_decrease_ttl`) — by the device map. Anything else falls through to the socket
/// (`Label::Redirect`), where the core does exactly what it did before. Registers: r6 = ctx,
/// r7 = data, r8 = data_end then the `fib` value, r9 = output port; stack: r10-8 the `fib` key,
/// r10-12 a port key, r10-24 the bytes to count, r10-32 (TC) the frames to count.
fn router_fast_path(
    b: &mut Builder,
    fast: &RouterFastProg,
    addresses: &[(Ipv4Addr, u8)],
    hook: Hook,
) {
    let port = fast.port as i32;
    let (data, data_end) = hook.data();
    b.push(Insn::new(LDX_MEM_W, 7, 6, data, 0));
    b.push(Insn::new(LDX_MEM_W, 8, 6, data_end, 0));
    b.push(Insn::new(ALU64_MOV_X, 2, 7, 0, 0));
    b.push(Insn::new(ALU64_ADD_K, 2, 0, 0, 34));
    b.jump(JMP_JGT_X, 2, 8, 0, Label::Redirect); // shorter than Ethernet + IPv4
                                                 // To this port's MAC.
    let mac = fast.mac;
    b.push(Insn::new(LDX_MEM_W, 2, 7, 0, 0));
    b.jump(
        JMP32_JNE_K,
        2,
        0,
        i32::from_le_bytes([mac[0], mac[1], mac[2], mac[3]]),
        Label::Redirect,
    );
    b.push(Insn::new(LDX_MEM_H, 2, 7, 4, 0));
    b.jump(
        JMP32_JNE_K,
        2,
        0,
        i32::from(u16::from_le_bytes([mac[4], mac[5]])),
        Label::Redirect,
    );
    // TTL above 1 (the core answers time-exceeded).
    b.push(Insn::new(LDX_MEM_B, 2, 7, 22, 0));
    b.jump(JMP_JLE_K, 2, 0, 1, Label::Redirect);
    // Martian sources and destinations (the core drops and counts them).
    for (at, class_e) in [(26, 224), (30, 240)] {
        b.push(Insn::new(LDX_MEM_B, 2, 7, at, 0));
        b.jump(JMP_JEQ_K, 2, 0, 0, Label::Redirect);
        b.jump(JMP_JEQ_K, 2, 0, 127, Label::Redirect);
        b.jump(JMP_JGE_K, 2, 0, class_e, Label::Redirect);
    }
    // A source that is one of the router's own addresses.
    b.push(Insn::new(LDX_MEM_W, 2, 7, 26, 0));
    for (addr, _) in addresses {
        b.jump(JMP32_JEQ_K, 2, 0, word(*addr), Label::Redirect);
    }
    // The header checksum: the five header words summed and folded to 16 bits are all ones
    // (byte order does not change a ones'-complement sum).
    b.push(Insn::new(LDX_MEM_W, 2, 7, 14, 0));
    for at in [18, 22, 26, 30] {
        b.push(Insn::new(LDX_MEM_W, 3, 7, at, 0));
        b.push(Insn::new(ALU64_ADD_X, 2, 3, 0, 0));
    }
    b.push(Insn::new(ALU64_MOV_X, 3, 2, 0, 0));
    b.push(Insn::new(ALU64_RSH_K, 3, 0, 0, 32));
    b.push(Insn::new(ALU32_MOV_X, 2, 2, 0, 0));
    b.push(Insn::new(ALU64_ADD_X, 2, 3, 0, 0));
    for _ in 0..3 {
        b.push(Insn::new(ALU64_MOV_X, 3, 2, 0, 0));
        b.push(Insn::new(ALU64_RSH_K, 3, 0, 0, 16));
        b.push(Insn::new(ALU64_AND_K, 2, 0, 0, 0xffff));
        b.push(Insn::new(ALU64_ADD_X, 2, 3, 0, 0));
    }
    b.jump(JMP_JNE_K, 2, 0, 0xffff, Label::Redirect);
    // The frame's length: at most max_frame (at TC, or a TCP super-frame whose segments fit),
    // and holding the whole packet (total length).
    let frames_at = match hook {
        Hook::Xdp => {
            b.push(Insn::new(ALU64_MOV_X, 1, 6, 0, 0));
            b.push(Insn::new(JMP_CALL, 0, 0, 0, HELPER_XDP_BUFF_LEN));
            b.push(Insn::new(STX_MEM_DW, 10, 0, -24, 0));
            b.jump(JMP_JGT_K, 0, 0, fast.max_frame as i32, Label::Redirect);
            None
        }
        Hook::Tc => {
            tc_length(b, fast.max_frame, GsoHeaders::Ipv4Plain);
            b.push(Insn::new(LDX_MEM_W, 0, 6, SKB_LEN, 0));
            Some(-32)
        }
    };
    b.push(Insn::new(LDX_MEM_H, 2, 7, 16, 0));
    b.push(Insn::new(ALU_TO_BE, 2, 0, 0, 16));
    b.push(Insn::new(ALU64_ADD_K, 2, 0, 0, 14));
    b.jump(JMP_JGT_X, 2, 0, 0, Label::Redirect);
    // The destination's longest match: a resolved next hop, not `TO_CORE`.
    b.push(Insn::new(ST_MEM_W, 10, 0, -8, 32));
    b.push(Insn::new(LDX_MEM_W, 2, 7, 30, 0));
    b.push(Insn::new(STX_MEM_W, 10, 2, -4, 0));
    b.lookup(fast.fib_fd, -8, Label::Redirect);
    b.push(Insn::new(ALU64_MOV_X, 8, 0, 0, 0));
    b.push(Insn::new(LDX_MEM_W, 9, 8, 0, 0));
    b.jump(JMP32_JEQ_K, 9, 0, -1, Label::Redirect);
    both_open(b, fast.open_fd, port);
    // Out by the device map (a port missing from it falls back to the socket, the frame
    // untouched), and only then rewritten.
    match hook {
        Hook::Xdp => redirect_out(b, fast.tx_fd),
        Hook::Tc => tc_redirect_out(b, fast.tx_fd),
    }
    for (from, to, code) in [
        (4, 0, LDX_MEM_W), // next hop's MAC
        (8, 4, LDX_MEM_H),
        (10, 6, LDX_MEM_H), // output port's MAC
        (12, 8, LDX_MEM_W),
    ] {
        b.push(Insn::new(code, 2, 8, from, 0));
        let store = if code == LDX_MEM_W {
            STX_MEM_W
        } else {
            STX_MEM_H
        };
        b.push(Insn::new(store, 7, 2, to, 0));
    }
    // TTL − 1; checksum + htons(0x0100) with the end-around carry, as `ip_decrease_ttl`.
    b.push(Insn::new(LDX_MEM_B, 2, 7, 22, 0));
    b.push(Insn::new(ALU64_ADD_K, 2, 0, 0, -1));
    b.push(Insn::new(STX_MEM_B, 7, 2, 22, 0));
    b.push(Insn::new(LDX_MEM_H, 2, 7, 24, 0));
    b.push(Insn::new(ALU64_ADD_K, 2, 0, 0, 1));
    b.push(Insn::new(JMP_JLT_K, 2, 0, 1, 0xffff));
    b.push(Insn::new(ALU64_ADD_K, 2, 0, 0, 1));
    b.push(Insn::new(STX_MEM_H, 7, 2, 24, 0));
    count_and_redirect(b, fast.stats_fd, port, -24, frames_at, hook.forwarded());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_encode_as_the_kernel_reads_them() {
        // r0 = 2; exit — the smallest XDP_PASS program.
        assert_eq!(
            Insn::new(ALU64_MOV_K, 0, 0, 0, 2).to_bytes(),
            [0xb7, 0, 0, 0, 2, 0, 0, 0]
        );
        assert_eq!(Insn::new(JMP_EXIT, 0, 0, 0, 0).to_bytes()[0], 0x95);
        // r5 = *(u16 *)(r2 + 12): source register in the high nibble.
        assert_eq!(
            Insn::new(LDX_MEM_H, 5, 2, 12, 0).to_bytes(),
            [0x69, 0x25, 12, 0, 0, 0, 0, 0]
        );
        assert_eq!(word(Ipv4Addr::new(198, 18, 1, 1)), 0x0101_12c6);
    }

    #[test]
    fn jumps_land_on_their_labels() {
        let prog = program(
            &Steering::Router {
                addresses: vec![(Ipv4Addr::new(198, 18, 1, 1), 24)],
                fast: None,
            },
            3,
            XDP_PASS,
        );
        let pass = prog
            .iter()
            .position(|i| i.code == ALU64_MOV_K && i.imm == XDP_PASS as i32 && i.regs == 0)
            .unwrap();
        let redirect = prog.iter().position(|i| i.code == LD_IMM64).unwrap() - 1;
        for (at, i) in prog.iter().enumerate() {
            if matches!(i.code, JMP32_JEQ_K | JMP32_JNE_K | JMP_JGT_X | JMP_JA) {
                let target = (at as i64 + 1 + i64::from(i.off)) as usize;
                assert!(
                    target == pass || target == redirect,
                    "jump at {at} to {target}"
                );
            }
        }
        // A switch port's program is the redirect alone.
        assert_eq!(program(&Steering::Everything, 3, XDP_PASS).len(), 7);
    }
}

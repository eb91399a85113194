//! Classic BPF socket filters (`struct sock_filter`, `<linux/filter.h>`): the few opcodes the
//! packet ports' filters use, and, for tests, an interpreter of them that runs a filter the way
//! the kernel does. Hand-written: a filter here is a handful of instructions, and no maintained
//! crate assembles classic BPF for `SO_ATTACH_FILTER`.

/// A classic BPF instruction.
pub(crate) const fn op(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// `BPF_LD|BPF_B|BPF_ABS`: a byte of the frame.
pub(crate) const LDB: u16 = 0x30;
/// `BPF_LD|BPF_W|BPF_ABS`: with `SKF_AD_OFF` (the `SKF_AD_*` below), an ancillary load.
pub(crate) const LDW: u16 = 0x20;
/// `BPF_LD|BPF_W|BPF_LEN`: the frame's length (`skb->len`, from the Ethernet header).
pub(crate) const LD_LEN: u16 = 0x80;
/// `BPF_ALU|BPF_AND|BPF_K`.
pub(crate) const AND: u16 = 0x54;
/// `BPF_JMP|BPF_JEQ|BPF_K`.
pub(crate) const JEQ: u16 = 0x15;
/// `BPF_JMP|BPF_JGT|BPF_K`.
pub(crate) const JGT: u16 = 0x25;
/// `BPF_RET|BPF_K`.
pub(crate) const RET: u16 = 0x06;
/// `SKF_AD_OFF + SKF_AD_PROTOCOL`: the skb's EtherType, host order.
pub(crate) const SKF_AD_PROTOCOL: u32 = 0xffff_f000;
/// `SKF_AD_OFF + SKF_AD_VLAN_TAG_PRESENT`: whether the kernel moved a tag into metadata.
pub(crate) const SKF_AD_VLAN_TAG_PRESENT: u32 = 0xffff_f000 + 48;
/// A filter's "accept the whole frame" (more than the longest super-frame).
pub(crate) const ALL: u32 = 0x4_0000;

/// Runs `filter` on `frame` the way the kernel does (the opcodes above only), with the skb's
/// metadata: its length is `len` (not `frame.len()`, so a test need not build a 64 KB frame),
/// its EtherType the frame's, and `tagged` whether a tag was moved into metadata.
#[cfg(test)]
pub(crate) fn run(filter: &[libc::sock_filter], frame: &[u8], len: u32, tagged: bool) -> u32 {
    let mut a = 0u32;
    let mut pc = 0usize;
    loop {
        let f = filter[pc];
        pc += 1;
        match f.code {
            LDW if f.k == SKF_AD_PROTOCOL => {
                a = u32::from(u16::from_be_bytes([frame[12], frame[13]]))
            }
            LDW if f.k == SKF_AD_VLAN_TAG_PRESENT => a = u32::from(tagged),
            LDB => a = u32::from(frame[f.k as usize]),
            LD_LEN => a = len,
            AND => a &= f.k,
            JEQ => pc += usize::from(if a == f.k { f.jt } else { f.jf }),
            JGT => pc += usize::from(if a > f.k { f.jt } else { f.jf }),
            RET => return f.k,
            other => panic!("opcode {other:#x}"),
        }
    }
}

//! The proxy-MAC address plan (EtheReal §2.2 and §3.3; DESIGN.md §4).
//!
//! A proxy MAC is `<prefix: 4 bytes>:<connection id: 2 bytes>`. The lowest ids under the prefix
//! are reserved for control traffic (EtheReal reserves `FF:FF:FF:FF:00:00`–`00:0A` "for
//! connection setup and inter switch messaging"); every other id names a real-time connection on
//! one link. See `docs/protocol.md` §1.

use crate::ethernet::Address;

/// The connection id whose proxy MAC carries switch-to-switch and host-to-switch control frames.
pub const CONTROL_ID: u16 = 0x0000;

/// Where proxy MACs live and which of their connection ids are reserved for control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProxyMacPlan {
    /// The first four octets of every proxy MAC.
    pub prefix: [u8; 4],
    /// Ids `0..reserved` are control addresses, never connection ids.
    pub reserved: u16,
}

impl ProxyMacPlan {
    /// Our default: the locally administered unicast prefix `02:52:54:4c` ("RTL"), ids
    /// `0x0000`–`0x000F` reserved.
    pub const DEFAULT: ProxyMacPlan = ProxyMacPlan {
        prefix: [0x02, 0x52, 0x54, 0x4c],
        reserved: 0x0010,
    };

    /// The paper-compatible plan: prefix `FF:FF:FF:FF`, ids `0x0000`–`0x000A` reserved.
    pub const fn paper() -> ProxyMacPlan {
        ProxyMacPlan {
            prefix: [0xff; 4],
            reserved: 0x000b,
        }
    }

    /// Whether `addr` lies under this plan's prefix (control or connection).
    pub fn covers(&self, addr: &Address) -> bool {
        addr.0[..4] == self.prefix
    }

    fn id_of(addr: &Address) -> u16 {
        u16::from_be_bytes([addr.0[4], addr.0[5]])
    }

    /// The connection id named by `addr`: `None` for addresses outside the prefix and for the
    /// reserved control ids.
    pub fn connection_id(&self, addr: &Address) -> Option<u16> {
        let id = Self::id_of(addr);
        (self.covers(addr) && id >= self.reserved).then_some(id)
    }

    /// Whether `addr` is one of the reserved control addresses.
    pub fn is_control(&self, addr: &Address) -> bool {
        self.covers(addr) && Self::id_of(addr) < self.reserved
    }

    /// Whether `id` is usable as a connection id (not reserved).
    pub fn is_connection_id(&self, id: u16) -> bool {
        id >= self.reserved
    }

    /// The proxy MAC for `id` (a connection id, or a reserved control id).
    pub fn mac_for(&self, id: u16) -> Address {
        let [p0, p1, p2, p3] = self.prefix;
        let [i0, i1] = id.to_be_bytes();
        Address([p0, p1, p2, p3, i0, i1])
    }

    /// The destination of control frames: [`Self::mac_for`]`(`[`CONTROL_ID`]`)`.
    pub fn control_mac(&self) -> Address {
        self.mac_for(CONTROL_ID)
    }
}

impl Default for ProxyMacPlan {
    fn default() -> ProxyMacPlan {
        ProxyMacPlan::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_plan() {
        let plan = ProxyMacPlan::default();
        assert_eq!(
            plan.control_mac(),
            Address([0x02, 0x52, 0x54, 0x4c, 0x00, 0x00])
        );
        assert!(plan.control_mac().is_local() && plan.control_mac().is_unicast());
        let conn = Address([0x02, 0x52, 0x54, 0x4c, 0x03, 0x09]);
        assert_eq!(plan.connection_id(&conn), Some(0x0309));
        assert!(!plan.is_control(&conn));
        assert_eq!(plan.mac_for(0x0309), conn);
        let last_reserved = plan.mac_for(0x000f);
        assert!(plan.is_control(&last_reserved));
        assert_eq!(plan.connection_id(&last_reserved), None);
        assert_eq!(plan.connection_id(&plan.mac_for(0x0010)), Some(0x0010));
        assert!(!plan.is_connection_id(0x000f) && plan.is_connection_id(0x0010));
    }

    #[test]
    fn paper_plan() {
        let plan = ProxyMacPlan::paper();
        assert_eq!(
            plan.mac_for(0x0778),
            Address([0xff, 0xff, 0xff, 0xff, 0x07, 0x78])
        );
        assert!(plan.is_control(&Address([0xff, 0xff, 0xff, 0xff, 0x00, 0x0a])));
        assert_eq!(
            plan.connection_id(&Address([0xff, 0xff, 0xff, 0xff, 0x00, 0x0b])),
            Some(0x000b)
        );
        // Broadcast is under the paper prefix with id 0xffff: a connection id, as in the paper
        // the switch checks for broadcast first.
        assert_eq!(plan.connection_id(&Address::BROADCAST), Some(0xffff));
    }

    #[test]
    fn other_prefixes_are_neither() {
        let plan = ProxyMacPlan::default();
        for addr in [
            Address([0x02, 0x52, 0x54, 0x4d, 0x00, 0x00]),
            Address([0x02, 0x52, 0x54, 0x4d, 0x03, 0x09]),
            Address::BROADCAST,
        ] {
            assert_eq!(plan.connection_id(&addr), None, "{addr}");
            assert!(!plan.is_control(&addr), "{addr}");
        }
    }
}

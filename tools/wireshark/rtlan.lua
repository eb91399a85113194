-- Wireshark/tshark dissector for rtlan's own Ethernet protocols.
--
--   rtlan control protocol (EtherType 0x88B5): the reservation signalling between host daemons
--     and switches, docs/protocol.md byte by byte — the 12-byte header, the body of every message
--     type (SETUP, SETUP_OK, SETUP_FAIL, TEARDOWN, TEARDOWN_ACK, HELLO, REFRESH, REFRESH_ACK) and
--     the TLV area (AUTH, DELAY, BOUND, EPOCH, REASON; unknown TLVs shown as data). Fields are
--     `rtlan.*` (docs/protocol.md "Reading captures" lists them); a message that rtlan's receivers
--     would drop (bad magic, version, length, flags or TLV area, an inconsistent SETUP) is flagged
--     with expert info, unknown message types with a warning.
--   RETHER (EtherType 0x88B6): the timed-token protocol of docs/rether.md, byte by byte; fields
--     `rether.*`.
--
-- Use:  tshark -X lua_script:tools/wireshark/rtlan.lua -r capture.pcap
--       tshark -X lua_script:tools/wireshark/rtlan.lua -r capture.pcap -Y rtlan -V
--       wireshark -X lua_script:tools/wireshark/rtlan.lua capture.pcap
-- or copy this file into Wireshark's personal plugins folder.
-- Tested by crates/wire/tests/control_tshark.rs (every control message the wire module emits,
-- and the frames the simulated switches and host daemons emit) and
-- crates/wire/tests/rether_tshark.rs (every RETHER message the wire module emits).

local rether = Proto("rether", "RETHER timed-token protocol")

local types = {
    [1] = "SWITCH", [2] = "SWITCH_ACK", [3] = "TOKEN", [4] = "SWITCH_TO_CSMA",
    [5] = "JOIN", [6] = "LEAVE", [7] = "DATA",
}
local phases = { [0] = "real-time", [1] = "non-real-time" }

local f = rether.fields
f.magic = ProtoField.bytes("rether.magic", "Magic")
f.version = ProtoField.uint8("rether.version", "Version")
f.type = ProtoField.uint8("rether.type", "Type", base.DEC, types)
f.flags = ProtoField.uint8("rether.flags", "Flags", base.HEX)
f.regenerate = ProtoField.bool("rether.flags.regenerate", "Regenerate", 8, nil, 0x01)
f.length = ProtoField.uint16("rether.length", "Length")
f.generation = ProtoField.uint32("rether.generation", "Generation")
f.source = ProtoField.uint16("rether.source", "Source station")
f.dest = ProtoField.uint16("rether.dest", "Destination station", base.DEC, { [0xffff] = "all" })
f.trt = ProtoField.uint32("rether.trt_ns", "Token rotation time (ns)")
f.t_nrt = ProtoField.uint32("rether.t_nrt_ns", "T_NRT (ns)")
f.attempt = ProtoField.uint8("rether.attempt", "Attempt")
f.initiator = ProtoField.uint16("rether.initiator", "Initiator")
f.residual = ProtoField.uint32("rether.token.residual_ns", "Residual time (ns)")
f.cycle = ProtoField.uint32("rether.token.cycle", "Cycle")
f.phase = ProtoField.uint8("rether.token.phase", "Phase", base.DEC, phases)
f.nrt_next = ProtoField.uint16("rether.token.nrt_next", "NRT round resumes at")
f.members = ProtoField.uint16("rether.token.members", "Stations")
f.sessions = ProtoField.uint16("rether.token.sessions", "RT-set entries")
f.rt_next = ProtoField.uint16("rether.token.rt_next", "RT visit")
f.pass = ProtoField.uint16("rether.token.pass", "Pass")
f.member = ProtoField.uint16("rether.member", "Station", base.DEC, nil, 0x7fff)
f.dead = ProtoField.bool("rether.member.dead", "Dead", 16, nil, 0x8000)
f.s_session = ProtoField.uint16("rether.rt.session", "Session")
f.s_sender = ProtoField.uint16("rether.rt.sender", "Sender")
f.s_receiver = ProtoField.uint16("rether.rt.receiver", "Receiver", base.DEC, { [0] = "none" })
f.s_closing = ProtoField.bool("rether.rt.closing", "Closing", 16, nil, 0x0001)
f.s_tht = ProtoField.uint32("rether.rt.tht_ns", "THT (ns)")
f.s_bytes = ProtoField.uint32("rether.rt.bytes_per_trt", "Bytes per TRT")
f.d_session = ProtoField.uint16("rether.data.session", "Session")
f.d_unit = ProtoField.uint32("rether.data.unit", "Data unit")
f.d_fragment = ProtoField.uint16("rether.data.fragment", "Fragment")
f.d_fragments = ProtoField.uint16("rether.data.fragments", "Fragments")
f.d_payload = ProtoField.bytes("rether.data.payload", "Payload")

local e_malformed = ProtoExpert.new("rether.malformed", "Malformed RETHER message",
    expert.group.MALFORMED, expert.severity.ERROR)
rether.experts = { e_malformed }

local HEADER = 16

function rether.dissector(buf, pinfo, tree)
    if buf:len() < HEADER or buf(0, 2):uint() ~= 0x5245 then
        return 0
    end
    pinfo.cols.protocol = "RETHER"
    local length = buf(6, 2):uint()
    local root = tree:add(rether, buf(0, math.min(length, buf:len())))
    root:add(f.magic, buf(0, 2))
    root:add(f.version, buf(2, 1))
    local mtype = buf(3, 1):uint()
    root:add(f.type, buf(3, 1))
    local flags = root:add(f.flags, buf(4, 1))
    flags:add(f.regenerate, buf(4, 1))
    root:add(f.length, buf(6, 2))
    root:add(f.generation, buf(8, 4))
    root:add(f.source, buf(12, 2))
    root:add(f.dest, buf(14, 2))
    local name = types[mtype] or ("type " .. mtype)
    local dest = buf(14, 2):uint()
    pinfo.cols.info = string.format("%s g%d %d -> %s", name, buf(8, 4):uint(), buf(12, 2):uint(),
        dest == 0xffff and "all" or tostring(dest))
    if length < HEADER or length > buf:len() then
        root:add_proto_expert_info(e_malformed, "length field out of range")
        return buf:len()
    end
    local body = buf(HEADER, length - HEADER)
    local n = body:len()
    if mtype == 1 and n >= 12 then
        root:add(f.trt, body(0, 4))
        root:add(f.t_nrt, body(4, 4))
        root:add(f.attempt, body(8, 1))
    elseif mtype == 2 and n >= 4 then
        root:add(f.initiator, body(0, 2))
    elseif mtype == 3 and n >= 28 then
        root:add(f.residual, body(0, 4))
        root:add(f.trt, body(4, 4))
        root:add(f.t_nrt, body(8, 4))
        root:add(f.cycle, body(12, 4))
        root:add(f.phase, body(16, 1))
        root:add(f.nrt_next, body(18, 2))
        root:add(f.members, body(20, 2))
        root:add(f.sessions, body(22, 2))
        root:add(f.rt_next, body(24, 2))
        root:add(f.pass, body(26, 2))
        local m, s = body(20, 2):uint(), body(22, 2):uint()
        if n ~= 28 + 2 * m + 16 * s then
            root:add_proto_expert_info(e_malformed, "list counts do not match the length")
            return length
        end
        local list = root:add(rether, body(28, 2 * m), "Stations")
        for i = 0, m - 1 do
            local entry = body(28 + 2 * i, 2)
            local item = list:add(f.member, entry)
            item:add(f.dead, entry)
        end
        local at = 28 + 2 * m
        for i = 0, s - 1 do
            local e = body(at + 16 * i, 16)
            local item = root:add(rether, e, string.format("RT-set entry %d", i))
            item:add(f.s_session, e(0, 2))
            item:add(f.s_sender, e(2, 2))
            item:add(f.s_receiver, e(4, 2))
            item:add(f.s_closing, e(6, 2))
            item:add(f.s_tht, e(8, 4))
            item:add(f.s_bytes, e(12, 4))
        end
    elseif mtype == 7 and n >= 12 then
        root:add(f.d_session, body(0, 2))
        root:add(f.d_unit, body(4, 4))
        root:add(f.d_fragment, body(8, 2))
        root:add(f.d_fragments, body(10, 2))
        if n > 12 then
            root:add(f.d_payload, body(12, n - 12))
        end
    elseif (mtype == 4 or mtype == 5 or mtype == 6) and n == 0 then
        -- no body
    else
        root:add_proto_expert_info(e_malformed, "body length does not fit the type")
    end
    return length
end

DissectorTable.get("ethertype"):add(0x88b6, rether)

-- ---------------------------------------------------------------------------------------------
-- rtlan control protocol, EtherType 0x88B5 (docs/protocol.md §3–§8).

local control = Proto("rtlan", "rtlan control protocol")

local msg_types = {
    [1] = "SETUP", [2] = "SETUP_OK", [3] = "SETUP_FAIL", [4] = "TEARDOWN",
    [5] = "TEARDOWN_ACK", [6] = "HELLO", [7] = "REFRESH", [8] = "REFRESH_ACK",
}
-- Body length of each type (§3).
local body_lens = { [1] = 30, [2] = 4, [3] = 8, [4] = 4, [5] = 4, [6] = 14, [7] = 4, [8] = 4 }
local fail_reasons = {
    [1] = "BANDWIDTH", [2] = "BACKPLANE", [3] = "CPU", [4] = "BUFFER", [5] = "NO_ROUTE",
    [6] = "IDS_EXHAUSTED", [7] = "MALFORMED", [8] = "UNAUTHORIZED", [9] = "DELAY",
    [10] = "PORT_LIMIT",
}
local roles = { [1] = "host daemon", [2] = "switch" }
local tlv_types = { [1] = "AUTH", [2] = "DELAY", [3] = "BOUND", [4] = "EPOCH", [5] = "REASON" }
-- Exact value length of the typed TLVs (§6, §8).
local tlv_lens = { [1] = 28, [2] = 16, [3] = 12, [4] = 8, [5] = 1 }
local teardown_reasons = {
    [1] = "closed", [2] = "expired", [3] = "state_lost", [4] = "neighbour_restarted",
    [5] = "topology_change", [6] = "link_down", [7] = "neighbour_lost", [8] = "administrative",
}

local HEADER_LEN = 12
local FLAG_RETRANSMISSION = 0x01
local FLAG_AUTHENTICATED = 0x02

local cf = control.fields
cf.magic = ProtoField.bytes("rtlan.magic", "Magic")
cf.version = ProtoField.uint8("rtlan.version", "Version")
cf.type = ProtoField.uint8("rtlan.type", "Type", base.DEC, msg_types)
cf.flags = ProtoField.uint8("rtlan.flags", "Flags", base.HEX)
cf.retransmission = ProtoField.bool("rtlan.flags.retransmission", "Retransmission", 8, nil,
    FLAG_RETRANSMISSION)
cf.authenticated = ProtoField.bool("rtlan.flags.authenticated", "Authenticated", 8, nil,
    FLAG_AUTHENTICATED)
cf.undefined = ProtoField.uint8("rtlan.flags.undefined", "Undefined bits", base.HEX, nil, 0xfc)
cf.hop = ProtoField.uint8("rtlan.hop", "Hop")
cf.length = ProtoField.uint16("rtlan.length", "Length")
cf.request_id = ProtoField.uint32("rtlan.request_id", "Request id")
cf.connection_id = ProtoField.uint16("rtlan.connection_id", "Connection id", base.HEX)
cf.reserved = ProtoField.bytes("rtlan.reserved", "Reserved")
cf.padding = ProtoField.bytes("rtlan.padding", "Padding (after length, ignored)")
cf.src_ip = ProtoField.ipv4("rtlan.setup.src_ip", "Source IP")
cf.dst_ip = ProtoField.ipv4("rtlan.setup.dst_ip", "Destination IP")
cf.dst_port = ProtoField.uint16("rtlan.setup.dst_port", "Destination UDP port")
cf.src_port = ProtoField.uint16("rtlan.setup.src_port", "Source UDP port")
cf.rate = ProtoField.uint64("rtlan.setup.rate", "Rate (bit/s)")
cf.max_burst = ProtoField.uint32("rtlan.setup.max_burst", "Max burst (bytes)")
cf.max_packet = ProtoField.uint16("rtlan.setup.max_packet", "Max packet (bytes)")
cf.hop_limit = ProtoField.uint8("rtlan.setup.hop_limit", "Hop limit")
cf.hops = ProtoField.uint8("rtlan.setup_ok.hops", "Hops")
cf.reason = ProtoField.uint8("rtlan.fail.reason", "Reason", base.DEC, fail_reasons)
cf.failed_hop = ProtoField.uint8("rtlan.fail.hop", "Failed hop")
cf.switch_ip = ProtoField.ipv4("rtlan.fail.switch_ip", "Switch IP")
cf.role = ProtoField.uint8("rtlan.hello.role", "Role", base.DEC, roles)
cf.port = ProtoField.uint16("rtlan.hello.port", "Port")
cf.mac = ProtoField.ether("rtlan.hello.mac", "MAC")
cf.mgmt_ip = ProtoField.ipv4("rtlan.hello.mgmt_ip", "Management IP")
cf.tlv_type = ProtoField.uint8("rtlan.tlv.type", "TLV type", base.DEC, tlv_types)
cf.tlv_length = ProtoField.uint8("rtlan.tlv.length", "TLV length")
cf.tlv_value = ProtoField.bytes("rtlan.tlv.value", "TLV value")
cf.key_id = ProtoField.uint32("rtlan.auth.key_id", "Key id")
cf.seq = ProtoField.uint64("rtlan.auth.seq", "Sequence number")
cf.digest = ProtoField.bytes("rtlan.auth.digest", "Digest (HMAC-SHA-256, leftmost 16 bytes)")
cf.required = ProtoField.uint64("rtlan.delay.required_ns", "Required delay (ns)")
cf.accumulated = ProtoField.uint64("rtlan.delay.accumulated_ns", "Accumulated latency (ns)")
cf.bound = ProtoField.uint64("rtlan.bound.bound_ns", "End-to-end delay bound (ns)")
cf.latency = ProtoField.uint32("rtlan.bound.latency_ns", "Sum of per-hop latencies (ns)")
cf.epoch = ProtoField.uint64("rtlan.epoch", "Boot epoch", base.HEX)
cf.teardown_reason = ProtoField.uint8("rtlan.teardown.reason", "Teardown reason", base.DEC,
    teardown_reasons)

local ce_malformed = ProtoExpert.new("rtlan.malformed", "Malformed rtlan control message",
    expert.group.MALFORMED, expert.severity.ERROR)
local ce_version = ProtoExpert.new("rtlan.version.unsupported", "Unsupported control protocol version",
    expert.group.PROTOCOL, expert.severity.ERROR)
local ce_unknown = ProtoExpert.new("rtlan.type.unknown", "Unknown control message type",
    expert.group.UNDECODED, expert.severity.WARN)
control.experts = { ce_malformed, ce_version, ce_unknown }

-- "0x0309": connection ids as docs/protocol.md writes them.
local function hex16(range)
    return string.format("0x%04x", range:uint())
end

-- Adds the body of message type `mtype` to `tree`; returns the Info column's detail.
local function dissect_body(mtype, body, tree)
    if mtype == 1 then
        tree:add(cf.src_ip, body(0, 4))
        tree:add(cf.dst_ip, body(4, 4))
        tree:add(cf.dst_port, body(8, 2))
        local src_port = tree:add(cf.src_port, body(10, 2))
        if body(10, 2):uint() == 0 then
            src_port:append_text(" (any)")
        end
        tree:add(cf.rate, body(12, 8))
        tree:add(cf.max_burst, body(20, 4))
        tree:add(cf.max_packet, body(24, 2))
        tree:add(cf.connection_id, body(26, 2))
        tree:add(cf.hop_limit, body(28, 1))
        tree:add(cf.reserved, body(29, 1))
        local rate, burst, packet = body(12, 8):uint64(), body(20, 4):uint(), body(24, 2):uint()
        if rate == UInt64(0) or packet == 0 or burst < packet then
            tree:add_proto_expert_info(ce_malformed,
                "inconsistent T-SPEC: zero rate or max packet, or max burst below max packet")
        end
        return string.format("id=%s %s -> %s:%d rate=%s burst=%d max_packet=%d", hex16(body(26, 2)),
            tostring(body(0, 4):ipv4()), tostring(body(4, 4):ipv4()), body(8, 2):uint(),
            tostring(rate), burst, packet)
    elseif mtype == 2 then
        tree:add(cf.connection_id, body(0, 2))
        tree:add(cf.hops, body(2, 1))
        tree:add(cf.reserved, body(3, 1))
        return string.format("id=%s hops=%d", hex16(body(0, 2)), body(2, 1):uint())
    elseif mtype == 3 then
        tree:add(cf.reason, body(0, 1))
        tree:add(cf.failed_hop, body(1, 1))
        tree:add(cf.connection_id, body(2, 2))
        tree:add(cf.switch_ip, body(4, 4))
        local code = body(0, 1):uint()
        return string.format("id=%s %s at hop %d (%s)", hex16(body(2, 2)),
            fail_reasons[code] or ("reason " .. code), body(1, 1):uint(),
            tostring(body(4, 4):ipv4()))
    elseif mtype == 6 then
        tree:add(cf.role, body(0, 1))
        tree:add(cf.reserved, body(1, 1))
        tree:add(cf.port, body(2, 2))
        tree:add(cf.mac, body(4, 6))
        tree:add(cf.mgmt_ip, body(10, 4))
        local role = body(0, 1):uint()
        return string.format("%s port %d %s %s", roles[role] or ("role " .. role),
            body(2, 2):uint(), tostring(body(4, 6):ether()), tostring(body(10, 4):ipv4()))
    else
        -- TEARDOWN, TEARDOWN_ACK, REFRESH, REFRESH_ACK.
        tree:add(cf.connection_id, body(0, 2))
        tree:add(cf.reserved, body(2, 2))
        return "id=" .. hex16(body(0, 2))
    end
end

-- Adds the TLV area `area` to `tree`; returns the Info column's detail and whether an AUTH TLV
-- was seen. Flags what Repr::parse and auth::verify refuse (§3, §6, §8).
local function dissect_tlvs(area, tree, root)
    local at, n = 0, area:len()
    local seen = {}
    local info = ""
    local auth_at, auth_end = nil, nil
    while at < n do
        if n - at < 2 then
            root:add_proto_expert_info(ce_malformed, "a single byte left over after the TLVs")
            tree:add(cf.tlv_value, area(at, n - at))
            break
        end
        local kind, len = area(at, 1):uint(), area(at + 1, 1):uint()
        if at + 2 + len > n then
            local item = tree:add(control, area(at, n - at), "TLV running past the length")
            item:add(cf.tlv_type, area(at, 1))
            item:add(cf.tlv_length, area(at + 1, 1))
            root:add_proto_expert_info(ce_malformed, "TLV runs past the message length")
            break
        end
        local name = tlv_types[kind] or ("type " .. kind)
        local item = tree:add(control, area(at, 2 + len), "TLV " .. name)
        item:add(cf.tlv_type, area(at, 1))
        item:add(cf.tlv_length, area(at + 1, 1))
        local value = len > 0 and area(at + 2, len) or nil
        if tlv_lens[kind] ~= nil then
            if seen[kind] then
                root:add_proto_expert_info(ce_malformed, name .. " TLV appears twice")
            end
            seen[kind] = true
            if len ~= tlv_lens[kind] then
                root:add_proto_expert_info(ce_malformed, string.format(
                    "%s TLV is %d bytes, must be %d", name, len, tlv_lens[kind]))
                if value then item:add(cf.tlv_value, value) end
                value = nil
            end
        elseif value then
            item:add(cf.tlv_value, value)
        end
        if kind == 1 then
            auth_at, auth_end = at, at + 2 + len
        end
        if value and kind == 1 then
            item:add(cf.key_id, value(0, 4))
            item:add(cf.seq, value(4, 8))
            item:add(cf.digest, value(12, 16))
            info = info .. string.format(" key=%d seq=%s", value(0, 4):uint(),
                tostring(value(4, 8):uint64()))
        elseif value and kind == 2 then
            local required = item:add(cf.required, value(0, 8))
            if value(0, 8):uint64() == UInt64(0) then
                required:append_text(" (none)")
            end
            item:add(cf.accumulated, value(8, 8))
            local required = value(0, 8):uint64()
            info = info .. string.format(" required=%s accumulated=%sns",
                required == UInt64(0) and "none" or (tostring(required) .. "ns"),
                tostring(value(8, 8):uint64()))
        elseif value and kind == 3 then
            item:add(cf.bound, value(0, 8))
            item:add(cf.latency, value(8, 4))
            info = info .. string.format(" bound=%sns", tostring(value(0, 8):uint64()))
        elseif value and kind == 4 then
            item:add(cf.epoch, value(0, 8))
        elseif value and kind == 5 then
            item:add(cf.teardown_reason, value(0, 1))
            local code = value(0, 1):uint()
            info = info .. " reason=" .. (teardown_reasons[code] or tostring(code))
        end
        at = at + 2 + len
    end
    if auth_end ~= nil and auth_end ~= n then
        root:add_proto_expert_info(ce_malformed, "AUTH TLV is not the last TLV")
    end
    return info, auth_at ~= nil
end

function control.dissector(buf, pinfo, tree)
    pinfo.cols.protocol = "rtlan"
    local avail = buf:len()
    if avail < HEADER_LEN then
        local root = tree:add(control, buf())
        root:add_proto_expert_info(ce_malformed, "shorter than the 12-byte header")
        pinfo.cols.info = "malformed control message"
        return avail
    end
    local length = buf(6, 2):uint()
    local root = tree:add(control, buf(0, math.min(math.max(length, HEADER_LEN), avail)))
    local magic = root:add(cf.magic, buf(0, 2))
    local version = root:add(cf.version, buf(2, 1))
    local mtype = buf(3, 1):uint()
    local type_item = root:add(cf.type, buf(3, 1))
    local flags_item = root:add(cf.flags, buf(4, 1))
    flags_item:add(cf.retransmission, buf(4, 1))
    flags_item:add(cf.authenticated, buf(4, 1))
    flags_item:add(cf.undefined, buf(4, 1))
    root:add(cf.hop, buf(5, 1))
    local length_item = root:add(cf.length, buf(6, 2))
    root:add(cf.request_id, buf(8, 4))
    local flags = buf(4, 1):uint()
    local name = msg_types[mtype] or ("type " .. mtype)
    -- A HELLO's request id is the sender's sequence number (§4.5).
    local info = string.format("%s %s=%d hop=%d", name, mtype == 6 and "seq" or "req",
        buf(8, 4):uint(), buf(5, 1):uint())
    if bit32.band(flags, FLAG_RETRANSMISSION) ~= 0 then
        info = info .. " [retransmission]"
    end
    if bit32.band(flags, FLAG_AUTHENTICATED) ~= 0 then
        info = info .. " [authenticated]"
    end
    pinfo.cols.info = info
    root:append_text(", " .. name)

    if buf(0, 2):uint() ~= 0x5254 then
        magic:add_proto_expert_info(ce_malformed, "magic is not \"RT\" (0x5254)")
        return avail
    end
    if buf(2, 1):uint() ~= 1 then
        version:add_proto_expert_info(ce_version, "version " .. buf(2, 1):uint() .. ", only 1 is defined")
        return avail
    end
    if bit32.band(flags, 0xfc) ~= 0 then
        flags_item:add_proto_expert_info(ce_malformed, "undefined flag bits set")
    end
    if length < HEADER_LEN or length > avail then
        length_item:add_proto_expert_info(ce_malformed, string.format(
            "length %d outside %d..%d (the received payload)", length, HEADER_LEN, avail))
        return avail
    end
    local body_len = body_lens[mtype]
    if body_len == nil then
        type_item:add_proto_expert_info(ce_unknown, "type " .. mtype .. " is not defined in version 1")
        if length > HEADER_LEN then
            root:add(cf.tlv_value, buf(HEADER_LEN, length - HEADER_LEN))
        end
        return length
    end
    if length < HEADER_LEN + body_len then
        length_item:add_proto_expert_info(ce_malformed, string.format(
            "length %d is shorter than the header and the %d-byte %s body", length, body_len, name))
        return length
    end
    local body = buf(HEADER_LEN, body_len)
    local body_tree = root:add(control, body, name .. " body")
    info = info .. " " .. dissect_body(mtype, body, body_tree)
    local has_auth = false
    if length > HEADER_LEN + body_len then
        local area = buf(HEADER_LEN + body_len, length - HEADER_LEN - body_len)
        local tlv_tree = root:add(control, area, "TLV area")
        local detail
        detail, has_auth = dissect_tlvs(area, tlv_tree, root)
        info = info .. detail
    end
    if has_auth ~= (bit32.band(flags, FLAG_AUTHENTICATED) ~= 0) then
        flags_item:add_proto_expert_info(ce_malformed,
            "AUTHENTICATED flag disagrees with the presence of an AUTH TLV")
    end
    pinfo.cols.info = info
    if avail > length then
        tree:add(cf.padding, buf(length, avail - length))
    end
    return avail
end

DissectorTable.get("ethertype"):add(0x88b5, control)

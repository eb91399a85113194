-- Wireshark/tshark dissector for rtlan's own Ethernet protocols.
--
--   RETHER (EtherType 0x88B6): the timed-token protocol of docs/rether.md, byte by byte.
--
-- Use:  tshark -X lua_script:tools/wireshark/rtlan.lua -r capture.pcap
--       wireshark -X lua_script:tools/wireshark/rtlan.lua capture.pcap
-- or copy this file into Wireshark's personal plugins folder.
-- Tested by crates/wire/tests/rether_tshark.rs on frames the wire module emits.

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

/*
 * RtlanDnc: runs DiscoDNC 2.8.1's TFA, SFA and PMOO on a network exported by
 * `rtlan analyze FILE --export-dnc OUT` and prints per-flow delay bounds and analysis times as
 * JSON on stdout. Part of rtlan's outside check of its bounds (tools/dnc/README.md).
 *
 * Usage: java -cp <DNC classes>:<NumBackend jar>:<commons-math3 jar>:<dir of this class>
 *            RtlanDnc FILE [--repeats N] [--arrival tb|tspec]
 *
 * Input (docs/analyze.md, "Export for DiscoDNC"): exact numbers (n or n/d) in bit, s, bit/s:
 *   rtlan-dnc 1
 *   server <id> <rate> <latency> <name>
 *   flow <rate> <burst> <max_packet> <peak> <host_delay> <id>,<id>,... <name>
 *
 * Model: each server a rate-latency curve beta_{rate,latency}, no maximum service curve; each
 * flow the token bucket gamma_{rate,burst} (default; DNC's FIFO bounds assume token buckets)
 * or, with --arrival tspec, min(peak*t + max_packet, rate*t + burst). DNC computes in double
 * precision (its default NumBackend); we hand it microseconds and bits, so rates in bit/us.
 *
 * Analyses: TFA and SFA on FIFO servers (DNC's Multiplexing.FIFO: the FIFO delay bound in TFA,
 * the FIFO left-over service curve in SFA); PMOO on ARBITRARY-multiplexing servers, because DNC
 * refuses PMOO on FIFO servers. Default arrival bounding (AGGR_PBOO_CONCATENATION).
 *
 * Timing: one pass = build nothing, clear DNC's arrival-bound caches, analyse every flow. Each
 * analysis runs `repeats` passes (default 10) after one warm-up pass (the JIT); min and median of
 * the passes are printed. The bounds printed are those of the last pass (all passes agree).
 *
 * Output: {"dnc":"2.8.1","arrival":..,"multiplexing":{..},"repeats":N,
 *          "flows":[{"name","host_delay_us","tfa_us","sfa_us","pmoo_us"}],   (network-only bounds)
 *          "errors":[..],"time_ms":{"tfa":{"min","median"},"sfa":{..},"pmoo":{..}}}
 * A bound is null where DNC threw; the exception is then listed in "errors".
 */

import java.io.IOException;
import java.math.BigDecimal;
import java.math.MathContext;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import org.networkcalculus.dnc.AnalysisConfig;
import org.networkcalculus.dnc.AnalysisConfig.Multiplexing;
import org.networkcalculus.dnc.curves.ArrivalCurve;
import org.networkcalculus.dnc.curves.Curve;
import org.networkcalculus.dnc.feedforward.ArrivalBoundDispatch;
import org.networkcalculus.dnc.network.server_graph.Flow;
import org.networkcalculus.dnc.network.server_graph.Server;
import org.networkcalculus.dnc.network.server_graph.ServerGraph;
import org.networkcalculus.dnc.tandem.AbstractTandemAnalysis;
import org.networkcalculus.dnc.tandem.analyses.PmooAnalysis;
import org.networkcalculus.dnc.tandem.analyses.SeparateFlowAnalysis;
import org.networkcalculus.dnc.tandem.analyses.TotalFlowAnalysis;

public final class RtlanDnc {
    /** A server line: rate in bit/us, latency in us. */
    record ServerSpec(double rate, double latency, String name) {}

    /** A flow line: rates in bit/us, sizes in bits, host delay in us, server ids. */
    record FlowSpec(double rate, double burst, double maxPacket, double peak, double hostDelay,
                    int[] path, String name) {}

    /** The analyses, in output order. */
    enum Kind { TFA, SFA, PMOO }

    private RtlanDnc() {}

    /** An exact number of the export ("n" or "n/d") as the nearest double. */
    static double number(String s) {
        int slash = s.indexOf('/');
        if (slash < 0) {
            return new BigDecimal(s).doubleValue();
        }
        return new BigDecimal(s.substring(0, slash))
                .divide(new BigDecimal(s.substring(slash + 1)), MathContext.DECIMAL128)
                .doubleValue();
    }

    /** Splits off the first `fields` white-space separated fields; the rest of the line last. */
    static String[] fields(String line, int fields, int lineNo) {
        String[] out = new String[fields + 1];
        String rest = line;
        for (int i = 0; i < fields; i++) {
            rest = rest.stripLeading();
            int sp = rest.indexOf(' ');
            if (sp < 0) {
                throw new IllegalArgumentException("line " + lineNo + ": too few fields: " + line);
            }
            out[i] = rest.substring(0, sp);
            rest = rest.substring(sp + 1);
        }
        out[fields] = rest;
        return out;
    }

    static void read(Path file, List<ServerSpec> servers, List<FlowSpec> flows) throws IOException {
        List<String> lines = Files.readAllLines(file);
        if (lines.isEmpty() || !lines.get(0).equals("rtlan-dnc 1")) {
            throw new IllegalArgumentException(file + ": not an rtlan-dnc 1 file");
        }
        for (int i = 1; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.startsWith("server ")) {
                String[] f = fields(line, 4, i + 1);
                if (Integer.parseInt(f[1]) != servers.size()) {
                    throw new IllegalArgumentException("line " + (i + 1) + ": server ids in order");
                }
                servers.add(new ServerSpec(number(f[2]) / 1e6, number(f[3]) * 1e6, f[4]));
            } else if (line.startsWith("flow ")) {
                String[] f = fields(line, 7, i + 1);
                int[] path = Arrays.stream(f[6].split(",")).mapToInt(Integer::parseInt).toArray();
                flows.add(new FlowSpec(number(f[1]) / 1e6, number(f[2]), number(f[3]),
                        number(f[4]) / 1e6, number(f[5]) * 1e6, path, f[7]));
            } else if (!line.isBlank()) {
                throw new IllegalArgumentException("line " + (i + 1) + ": unknown: " + line);
            }
        }
    }

    /** The server graph with every server under `mux`; flows in input order. */
    static ServerGraph graph(List<ServerSpec> servers, List<FlowSpec> flows, Multiplexing mux,
                             boolean tspec, List<Flow> dncFlows) throws Exception {
        ServerGraph sg = new ServerGraph();
        List<Server> s = new ArrayList<>();
        for (ServerSpec spec : servers) {
            s.add(sg.addServer(spec.name(),
                    Curve.getFactory().createRateLatency(spec.rate(), spec.latency()), mux));
        }
        for (FlowSpec f : flows) {
            for (int h = 0; h + 1 < f.path().length; h++) {
                Server a = s.get(f.path()[h]), b = s.get(f.path()[h + 1]);
                if (!sg.getOutTurns(a).stream().anyMatch(t -> t.getDest() == b)) {
                    sg.addTurn(a, b);
                }
            }
        }
        for (FlowSpec f : flows) {
            ArrivalCurve tb = Curve.getFactory().createTokenBucket(f.rate(), f.burst());
            ArrivalCurve alpha = tspec
                    ? Curve.getUtils().min(tb,
                            Curve.getFactory().createTokenBucket(f.peak(), f.maxPacket()))
                    : tb;
            List<Server> path = new ArrayList<>();
            for (int id : f.path()) {
                path.add(s.get(id));
            }
            dncFlows.add(sg.addFlow(f.name(), alpha, path));
        }
        return sg;
    }

    static AbstractTandemAnalysis analysis(Kind kind, ServerGraph sg) {
        AnalysisConfig config = new AnalysisConfig();
        return switch (kind) {
            case TFA -> new TotalFlowAnalysis(sg, config);
            case SFA -> new SeparateFlowAnalysis(sg, config);
            case PMOO -> new PmooAnalysis(sg, config);
        };
    }

    /** One pass: every flow's bound (us; NaN where DNC threw, message added to `errors`). */
    static double[] pass(Kind kind, ServerGraph sg, List<Flow> flows, List<String> errors) {
        ArrivalBoundDispatch.clearAllCaches();
        double[] bounds = new double[flows.size()];
        for (int i = 0; i < flows.size(); i++) {
            AbstractTandemAnalysis a = analysis(kind, sg);
            try {
                a.performAnalysis(flows.get(i));
                bounds[i] = a.getDelayBound().doubleValue();
            } catch (Exception e) {
                bounds[i] = Double.NaN;
                if (errors != null) {
                    errors.add(kind + " " + flows.get(i).getAlias() + ": " + e);
                }
            }
        }
        return bounds;
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    static String num(double v) {
        return Double.isFinite(v) ? String.format(Locale.ROOT, "%.6f", v) : "null";
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: RtlanDnc FILE [--repeats N] [--arrival tb|tspec]");
            System.exit(2);
        }
        int repeats = 10;
        boolean tspec = false;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--repeats" -> repeats = Integer.parseInt(args[++i]);
                case "--arrival" -> tspec = switch (args[++i]) {
                    case "tb" -> false;
                    case "tspec" -> true;
                    default -> throw new IllegalArgumentException("--arrival tb|tspec");
                };
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (repeats < 1) {
            throw new IllegalArgumentException("--repeats must be at least 1");
        }
        List<ServerSpec> servers = new ArrayList<>();
        List<FlowSpec> specs = new ArrayList<>();
        read(Path.of(args[0]), servers, specs);
        List<Flow> fifoFlows = new ArrayList<>(), arbFlows = new ArrayList<>();
        ServerGraph fifo = graph(servers, specs, Multiplexing.FIFO, tspec, fifoFlows);
        ServerGraph arb = graph(servers, specs, Multiplexing.ARBITRARY, tspec, arbFlows);

        Kind[] kinds = Kind.values();
        double[][] bounds = new double[kinds.length][];
        double[][] times = new double[kinds.length][];
        List<String> errors = new ArrayList<>();
        for (Kind kind : kinds) {
            ServerGraph sg = kind == Kind.PMOO ? arb : fifo;
            List<Flow> flows = kind == Kind.PMOO ? arbFlows : fifoFlows;
            pass(kind, sg, flows, null); // JIT warm-up
            double[] t = new double[repeats];
            for (int r = 0; r < repeats; r++) {
                long start = System.nanoTime();
                double[] b = pass(kind, sg, flows, r == repeats - 1 ? errors : null);
                t[r] = (System.nanoTime() - start) / 1e6;
                bounds[kind.ordinal()] = b;
            }
            Arrays.sort(t);
            times[kind.ordinal()] = t;
        }

        StringBuilder out = new StringBuilder();
        out.append("{\"dnc\":\"2.8.1\",\"arrival\":").append(quote(tspec ? "tspec" : "token-bucket"));
        out.append(",\"multiplexing\":{\"tfa\":\"FIFO\",\"sfa\":\"FIFO\",\"pmoo\":\"ARBITRARY\"}");
        out.append(",\"repeats\":").append(repeats).append(",\"flows\":[");
        for (int i = 0; i < specs.size(); i++) {
            out.append(i == 0 ? "" : ",").append("{\"name\":").append(quote(specs.get(i).name()));
            out.append(",\"host_delay_us\":").append(num(specs.get(i).hostDelay()));
            for (Kind k : kinds) {
                out.append(",\"").append(k.name().toLowerCase(Locale.ROOT)).append("_us\":")
                        .append(num(bounds[k.ordinal()][i]));
            }
            out.append('}');
        }
        out.append("],\"errors\":[");
        for (int i = 0; i < errors.size(); i++) {
            out.append(i == 0 ? "" : ",").append(quote(errors.get(i)));
        }
        out.append("],\"time_ms\":{");
        for (Kind k : kinds) {
            double[] t = times[k.ordinal()];
            out.append(k.ordinal() == 0 ? "" : ",").append('"')
                    .append(k.name().toLowerCase(Locale.ROOT)).append("\":{\"min\":")
                    .append(num(t[0])).append(",\"median\":").append(num(t[t.length / 2]))
                    .append('}');
        }
        out.append("}}");
        System.out.println(out);
    }
}

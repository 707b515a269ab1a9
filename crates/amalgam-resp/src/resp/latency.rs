//! LATENCY's subcommands (Redis 7.0's `latency.c`) over the latency
//! monitor's figures (`amalgam_metrics::latency`: the events, their
//! samples, GRAPH's sparkline and DOCTOR's report) and the per-command
//! histograms of `amalgam_metrics::cmdstats`.

use super::Arg;
use amalgam_metrics::latency::{doctor, graph, unix_secs, HISTOGRAM_FIRST_BUCKET_NS};
pub use amalgam_metrics::latency::{Monitor, StallEvents, STALL_EVENTS};
use amalgam_protocol::resp::{push_array, push_bulk, push_error, push_int, push_map, push_verbatim};

/// LATENCY's subcommands.
pub(crate) fn latency(ctx: &mut super::Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(sub) = super::sub(super::table::Cmd::Latency, args, out) else { return };
    let monitor = &ctx.shared.latency;
    match sub {
        "latest" => {
            let events = monitor.events.lock().unwrap_or_else(|e| e.into_inner());
            push_array(out, events.len());
            for (name, s) in events.iter() {
                let (time, ms) = s.samples.back().copied().unwrap_or((0, 0));
                push_array(out, 4);
                push_bulk(out, name.as_bytes());
                push_int(out, time as i64);
                push_int(out, ms as i64);
                push_int(out, s.max as i64);
            }
        }
        "history" => {
            let events = monitor.events.lock().unwrap_or_else(|e| e.into_inner());
            let s = events.iter().find(|(k, _)| k.as_bytes() == &args[2][..]).map(|(_, s)| s);
            let Some(s) = s else { return push_array(out, 0) };
            push_array(out, s.samples.len());
            for &(time, ms) in &s.samples {
                push_array(out, 2);
                push_int(out, time as i64);
                push_int(out, ms as i64);
            }
        }
        "reset" => push_int(out, monitor.reset(&args[2..]) as i64),
        "graph" => {
            let events = monitor.events.lock().unwrap_or_else(|e| e.into_inner());
            let found = events.iter().find(|(k, s)| k.as_bytes() == &args[2][..] && !s.samples.is_empty());
            let Some((name, s)) = found else {
                let m = format!("ERR No samples available for event '{}'", String::from_utf8_lossy(&args[2]));
                return push_error(out, m.as_bytes());
            };
            let graph = graph(name, s, unix_secs());
            drop(events);
            let proto = ctx.proto();
            push_verbatim(out, proto, b"txt", graph.as_bytes());
        }
        "doctor" => {
            let report = doctor(monitor);
            let proto = ctx.proto();
            push_verbatim(out, proto, b"txt", report.as_bytes());
        }
        "histogram" => histogram(ctx, &args[2..], out),
        _ => super::help(
            &[
                "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "DOCTOR",
                "    Return a human readable latency analysis report.",
                "GRAPH <event>",
                "    Return an ASCII latency graph for the <event> class.",
                "HISTORY <event>",
                "    Return time-latency samples for the <event> class.",
                "LATEST",
                "    Return the latest latency samples for all events.",
                "RESET [<event> ...]",
                "    Reset latency data of one or more <event> classes.",
                "    (default: reset all data for all event classes)",
                "HISTOGRAM [COMMAND ...]",
                "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
                "    If no commands are specified then all histograms are replied.",
                "HELP",
                "    Prints this help.",
            ],
            out,
        ),
    }
}

/// LATENCY HISTOGRAM [command ...]: Redis 7's map of command → {calls,
/// histogram_usec: {bucket µs → cumulative count}} from the per-command
/// histograms of INFO latencystats (`cmdstats.rs`), buckets at 1,024 ns
/// doubling as Redis's log iterator reports them; commands never run are
/// left out, unknown names ignored.
fn histogram(ctx: &mut super::Ctx<'_>, names: &[Arg<'_>], out: &mut Vec<u8>) {
    use super::cmdstats::{merged, slot_count, slot_name};
    let proto = ctx.proto();
    let rows = merged(&ctx.shared.workers);
    let wanted = |name: &str| names.is_empty() || names.iter().any(|n| n.eq_ignore_ascii_case(name.as_bytes()));
    let chosen: Vec<usize> = (0..slot_count()).filter(|&i| rows[i].hist.is_some() && wanted(slot_name(i))).collect();
    push_map(out, chosen.len(), proto);
    for i in chosen {
        let h = rows[i].hist.as_ref().expect("filtered");
        let total = h.len();
        push_bulk(out, slot_name(i).as_bytes());
        push_map(out, 2, proto);
        push_bulk(out, b"calls");
        push_int(out, rows[i].calls as i64);
        push_bulk(out, b"histogram_usec");
        let mut buckets = Vec::new();
        let (mut level, mut prev) = (HISTOGRAM_FIRST_BUCKET_NS, 0u64);
        // Bounded: the level doubles up to the histogram's 1 s ceiling.
        while prev < total && level <= super::cmdstats::HISTOGRAM_HIGH_NS * 2 {
            let top = h.highest_equivalent(level);
            let cumulative = h.count_between(0, top);
            if cumulative > prev {
                buckets.push((top / 1000, cumulative));
            }
            prev = cumulative;
            level *= 2;
        }
        push_map(out, buckets.len(), proto);
        for (us, n) in buckets {
            push_int(out, us as i64);
            push_int(out, n as i64);
        }
    }
}

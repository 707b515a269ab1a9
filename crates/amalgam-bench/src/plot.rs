//! Plots of results, as SVG (plotters' SVG backend): `net --plot DIR` draws
//! its own run, `amalgam-bench plot --out DIR FILE...` draws the JSON lines
//! of any number of runs (`net --json`, `replay --json`, the compare
//! scripts' OUT files), so one figure compares servers measured by separate
//! invocations.
//!
//! # Figures (each written only when the results hold its data)
//! * `latency.svg`: each run's latency percentile curve (`net`'s
//!   `latency_curve`), the HdrHistogram percentile plot: x is the
//!   percentile on a "nines" scale (-log10(1 - p): 90%, 99%, 99.9% equally
//!   spaced), y the latency on a log scale. Of repeated runs of one series
//!   (same name and rate or depth), the median run by p99 is drawn.
//! * `rate.svg`: open-loop runs (`--rate`, `--rates`): p99 (thick) and p50
//!   (thin) latency against the achieved request rate, one curve per
//!   server, each point the medians of the runs at one target rate.
//! * `throughput.svg`: closed-loop runs of one server at two or more
//!   pipeline depths (or else server threads, as `net --server-threads`
//!   recorded them, or else client threads): requests/s against them, the
//!   median of repeated runs, one curve per server.
//! * `miss-ratio.svg`: `replay` runs: miss ratio against the server's
//!   memory limit (`limit_maxbytes`), one curve per server (and scan
//!   setting).
//!
//! A run's series name is its `--label` (else its server address), with
//! its case (the compare scripts' `case` field) and, in `latency.svg`, its
//! rate or pipeline depth.

use plotters::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Figure size in pixels.
const SIZE_PX: (u32, u32) = (900, 560);
/// Lowest latency drawn on a log axis, in µs (the histogram records ≥ 1 ns).
const LATENCY_FLOOR_US: f64 = 0.1;
/// JSON lines read by `plot` from one file, at most.
const LINES_MAX: usize = 100_000;

/// Flags of `amalgam-bench plot`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Directory the SVGs are written to (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Files of JSON results, one per line (`net --json`, `replay --json`,
    /// the compare scripts' OUT).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// `amalgam-bench plot`: reads the files, writes the figures, names them.
pub fn run(args: &Args) -> Result<(), String> {
    let mut results = Vec::new();
    for f in &args.files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?;
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).take(LINES_MAX) {
            let v: Value = serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", f.display(), n + 1))?;
            results.push(v);
        }
    }
    let written = write_all(&args.out, &results)?;
    if written.is_empty() {
        return Err("nothing to plot: no latency curve, open-loop, pipeline sweep or replay result".into());
    }
    for p in written {
        println!("{}", p.display());
    }
    Ok(())
}

/// Writes every figure the results have data for into `dir`; returns the
/// files written.
pub fn write_all(dir: &Path, results: &[Value]) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    let figures: [(&str, Figure); 4] =
        [("latency.svg", latency), ("rate.svg", rate), ("throughput.svg", throughput), ("miss-ratio.svg", miss_ratio)];

    for (name, draw) in figures {
        let path = dir.join(name);
        if draw(&path, results)? {
            written.push(path);
        }
    }
    Ok(written)
}

/// A run's series name: label (or server), then its case.
fn name_of(r: &Value) -> String {
    let mut name = r["label"].as_str().or(r["server"].as_str()).unwrap_or("?").to_string();
    if let Some(case) = r["case"].as_str() {
        name += &format!(" {case}");
    }
    name
}

/// Draws one figure into a file if the results hold its data; says whether.
type Figure = fn(&Path, &[Value]) -> Result<bool, String>;

/// One curve: its name and points.
type Series = (String, Vec<(f64, f64)>);

fn err(e: impl std::fmt::Display) -> String {
    format!("plot: {e}")
}

/// x = -log10(1 - p) for a percentile p in 0..100.
fn nines(percentile: f64) -> f64 {
    -(1.0 - percentile / 100.0).max(1e-9).log10()
}

/// The percentile a "nines" x stands for, as a tick label.
fn nines_label(x: &f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let digits = (x.floor() as usize).saturating_sub(2).min(6);
    format!("{p:.digits$}%")
}

fn latency(path: &Path, results: &[Value]) -> Result<bool, String> {
    // Series name -> its runs' (p99, curve); the median run by p99 is drawn.
    type Runs = Vec<(f64, Vec<(f64, f64)>)>;
    let mut runs: BTreeMap<String, Runs> = BTreeMap::new();
    for r in results {
        let Some(curve) = r["latency_curve"].as_array() else { continue };
        let pts: Vec<(f64, f64)> =
            curve.iter().filter_map(|p| Some((nines(p[0].as_f64()?), p[1].as_f64()?.max(LATENCY_FLOOR_US)))).collect();
        if pts.is_empty() {
            continue;
        }
        let mut name = name_of(r);
        match r["target_rate"].as_f64() {
            Some(rate) => name += &format!(" at {:.0}k/s", rate / 1e3),
            None => name += &format!(" pipeline {}", r["pipeline"]),
        }
        let p99 = r["latency_us"]["p99"].as_f64().unwrap_or(0.0);
        runs.entry(name).or_default().push((p99, pts));
    }
    let series: Vec<Series> = runs
        .into_iter()
        .map(|(name, mut v)| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            let n = v.len();
            let (_, pts) = v.swap_remove((n - 1) / 2);
            (if n > 1 { format!("{name} (median of {n} runs by p99)") } else { name }, pts)
        })
        .collect();
    if series.is_empty() {
        return Ok(false);
    }
    let x_max = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(1.0, f64::max).ceil();
    let (lo, hi) = y_range(&series);
    let root = SVGBackend::new(path, SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Latency by percentile", ("sans-serif", 22))
        .margin(12)
        .margin_right(40)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max, (lo..hi).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("percentile")
        .y_desc("latency")
        .x_labels(x_max as usize + 1)
        .x_label_formatter(&nines_label)
        .y_label_formatter(&us_label)
        .draw()
        .map_err(err)?;
    draw_lines(&mut chart, &series, false, 2)?;
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(err)?;
    Ok(true)
}

fn rate(path: &Path, results: &[Value]) -> Result<bool, String> {
    // Series name -> target rate (as bits, for ordering) -> the runs'
    // (achieved rate, p50, p99); each point is the medians of its runs.
    type Runs = Vec<(f64, f64, f64)>;
    let mut runs: BTreeMap<String, BTreeMap<u64, Runs>> = BTreeMap::new();
    for r in results {
        let (Some(target), Some(x), Some(a), Some(b)) = (
            r["target_rate"].as_f64(),
            r["requests_per_s"].as_f64(),
            r["latency_us"]["p50"].as_f64(),
            r["latency_us"]["p99"].as_f64(),
        ) else {
            continue;
        };
        runs.entry(name_of(r)).or_default().entry(target.to_bits()).or_default().push((x, a, b));
    }
    let mut p50: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut p99: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (name, by_rate) in runs {
        for v in by_rate.into_values() {
            let x = median(v.iter().map(|t| t.0).collect());
            p50.entry(name.clone())
                .or_default()
                .push((x, median(v.iter().map(|t| t.1).collect()).max(LATENCY_FLOOR_US)));
            p99.entry(name.clone())
                .or_default()
                .push((x, median(v.iter().map(|t| t.2).collect()).max(LATENCY_FLOOR_US)));
        }
    }
    if p99.is_empty() {
        return Ok(false);
    }
    let sorted = |m: BTreeMap<String, Vec<(f64, f64)>>, suffix: &str| -> Vec<Series> {
        m.into_iter()
            .map(|(k, mut v)| {
                v.sort_by(|a, b| a.0.total_cmp(&b.0));
                (format!("{k} {suffix}"), v)
            })
            .collect()
    };
    let (p50, p99) = (sorted(p50, "p50"), sorted(p99, "p99"));
    let all: Vec<Series> = p50.iter().chain(&p99).cloned().collect();
    let x_max = all.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(0.0, f64::max) * 1.05;
    let (lo, hi) = y_range(&all);
    let root = SVGBackend::new(path, SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Open loop: latency against achieved rate", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max.max(1.0), (lo..hi).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("achieved requests/s")
        .y_desc("latency, timed from due")
        .x_label_formatter(&|x| format!("{:.0}k", x / 1e3))
        .y_label_formatter(&us_label)
        .draw()
        .map_err(err)?;
    draw_lines(&mut chart, &p99, true, 3)?;
    draw_lines(&mut chart, &p50, true, 1)?;
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(err)?;
    Ok(true)
}

fn throughput(path: &Path, results: &[Value]) -> Result<bool, String> {
    let closed: Vec<&Value> =
        results.iter().filter(|r| r["target_rate"].is_null() && r["requests_per_s"].is_number()).collect();
    let distinct = |field: &str| {
        let mut v: Vec<u64> = closed.iter().filter_map(|r| r[field].as_u64()).collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    let Some(field) = ["pipeline", "server_threads", "threads"].into_iter().find(|f| distinct(f) > 1) else {
        return Ok(false);
    };
    // Series name -> x -> the runs' requests/s (the median is drawn).
    let mut runs: BTreeMap<String, BTreeMap<u64, Vec<f64>>> = BTreeMap::new();
    for r in &closed {
        if let (Some(x), Some(y)) = (r[field].as_u64(), r["requests_per_s"].as_f64()) {
            runs.entry(name_of(r)).or_default().entry(x).or_default().push(y);
        }
    }
    let series: Vec<Series> = runs
        .into_iter()
        .map(|(name, by_x)| (name, by_x.into_iter().map(|(x, ys)| (x as f64, median(ys))).collect()))
        .collect();
    let x_max = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(1.0, f64::max);
    let y_max = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(1.0, f64::max) * 1.1;
    let root = SVGBackend::new(path, SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("Throughput by {field} (closed loop, median of runs)"), ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d((1f64..x_max.max(2.0)).log_scale(), 0f64..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(match field {
            "pipeline" => "pipeline depth",
            "server_threads" => "server threads",
            _ => "client threads",
        })
        .y_desc("requests/s")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{:.0}k", y / 1e3))
        .draw()
        .map_err(err)?;
    draw_lines(&mut chart, &series, true, 2)?;
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(err)?;
    Ok(true)
}

fn miss_ratio(path: &Path, results: &[Value]) -> Result<bool, String> {
    let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in results {
        let (Some(m), Some(limit)) = (r["miss_ratio"].as_f64(), r["limit_maxbytes"].as_f64()) else {
            continue;
        };
        let mut name = name_of(r);
        // The scripts name the scan case themselves.
        if r["scan_every"].as_u64().unwrap_or(0) > 0 && r["case"].is_null() {
            name += " with scans";
        }
        by.entry(name).or_default().push((limit / f64::from(1 << 20), m * 100.0));
    }
    if by.is_empty() {
        return Ok(false);
    }
    let series: Vec<Series> = by
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            (k, v)
        })
        .collect();
    let x_max = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(1.0, f64::max) * 1.1;
    let y_max = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(1.0, f64::max).min(100.0) * 1.1;
    let root = SVGBackend::new(path, SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Miss ratio by cache size (replay)", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(err)?;
    chart.configure_mesh().x_desc("server memory limit (MiB)").y_desc("miss ratio (%)").draw().map_err(err)?;
    draw_lines(&mut chart, &series, true, 2)?;
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(err)?;
    Ok(true)
}

/// A latency tick label: µs below a millisecond, else ms.
fn us_label(y: &f64) -> String {
    if *y >= 1000.0 {
        format!("{} ms", y / 1000.0)
    } else {
        format!("{y} µs")
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// A log axis's range around the series' y values, in whole decades.
fn y_range(series: &[Series]) -> (f64, f64) {
    let ys = series.iter().flat_map(|s| s.1.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let lo = 10f64.powf(lo.max(LATENCY_FLOOR_US).log10().floor());
    let hi = 10f64.powf(hi.max(lo * 10.0).log10().ceil());
    (lo, hi)
}

type Chart<'a, X, Y> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>;

/// Draws each series as a line `width` px wide in its own colour (the
/// i-th series in palette colour i, so two calls over the same servers
/// match), with points if `points`, and registers it for the legend.
fn draw_lines<X, Y>(chart: &mut Chart<'_, X, Y>, series: &[Series], points: bool, width: u32) -> Result<(), String>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(width)))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width)));
        if points {
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(err)?;
        }
    }
    Ok(())
}

fn legend<X, Y>(chart: &mut Chart<'_, X, Y>, pos: SeriesLabelPosition) -> Result<(), String>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .position(pos)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_axis() {
        assert!((nines(90.0) - 1.0).abs() < 1e-9);
        assert!((nines(99.9) - 3.0).abs() < 1e-9);
        assert_eq!(nines_label(&0.0), "0%");
        assert_eq!(nines_label(&1.0), "90%");
        assert_eq!(nines_label(&2.0), "99%");
        assert_eq!(nines_label(&3.0), "99.9%");
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0]), 2.5);
    }
}

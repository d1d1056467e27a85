//! Charts drawn on the server: this module computes the geometry, and the templates
//! write it as SVG elements, so every label is escaped like any other text and nothing
//! runs in the browser to draw them.

/// The drawing's size in its own units (`viewBox`); the page scales it to its width.
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 240.0;
/// Room for the counts on the left and the times below.
const LEFT: f64 = 48.0;
const BOTTOM: f64 = 22.0;
const TOP: f64 = 8.0;
/// Times written under the bars, at most.
const X_LABELS: usize = 6;
/// Gridlines above the baseline.
const Y_TICKS: i64 = 4;

/// One bucket of a series: its label and its visits by people and by bots.
pub(super) struct Bucket {
    pub(super) label: String,
    pub(super) people: i64,
    pub(super) bots: i64,
}

/// A bar chart of visits per bucket: people below, bots stacked on them when shown.
pub(super) struct BarChart {
    pub(super) view_box: String,
    pub(super) bars: Vec<Bar>,
    pub(super) grid: Vec<Tick>,
    pub(super) times: Vec<Tick>,
    /// The plot's left edge and baseline, for the axis line.
    pub(super) left: String,
    pub(super) right: String,
    pub(super) baseline: String,
}

pub(super) struct Bar {
    pub(super) x: String,
    pub(super) width: String,
    pub(super) people_y: String,
    pub(super) people_height: String,
    pub(super) bots_y: String,
    pub(super) bots_height: String,
    /// What the bar says when pointed at: its bucket and counts.
    pub(super) title: String,
}

/// A gridline (or a time) and its label.
pub(super) struct Tick {
    pub(super) at: String,
    pub(super) label: String,
}

/// One decimal: enough for a drawing 720 units wide, and a short page.
fn n(v: f64) -> String {
    format!("{v:.1}")
}

/// The smallest of 1, 2 or 5 times a power of ten that is at least `v` (at least 1).
fn nice_ceiling(v: i64) -> i64 {
    let mut step = 1_i64;
    loop {
        for m in [1, 2, 5] {
            let candidate = step.saturating_mul(m);
            if candidate >= v || candidate == i64::MAX {
                return candidate;
            }
        }
        step = step.saturating_mul(10);
    }
}

impl BarChart {
    /// The chart of `buckets`; bots are drawn only when `with_bots`.
    pub(super) fn of(buckets: &[Bucket], with_bots: bool) -> BarChart {
        let plot_w = WIDTH - LEFT;
        let plot_h = HEIGHT - BOTTOM - TOP;
        let baseline = HEIGHT - BOTTOM;
        let tallest = buckets
            .iter()
            .map(|b| b.people.max(0) + if with_bots { b.bots.max(0) } else { 0 })
            .max()
            .unwrap_or(0);
        // A multiple of the ticks, so that every gridline is a whole number.
        let per_tick = tallest.max(1).saturating_add(Y_TICKS - 1) / Y_TICKS;
        let top = nice_ceiling(per_tick).saturating_mul(Y_TICKS);
        let scale = |v: i64| v.max(0) as f64 / top as f64 * plot_h;
        let slot = plot_w / buckets.len().max(1) as f64;
        // A gap between bars while they are wide enough to have one.
        let gap = if slot >= 4.0 { slot * 0.15 } else { 0.0 };
        let bars = buckets
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let people_h = scale(b.people);
                let bots_h = if with_bots { scale(b.bots) } else { 0.0 };
                let title = if with_bots {
                    format!("{}: {} by people, {} by bots", b.label, b.people, b.bots)
                } else {
                    format!("{}: {} by people", b.label, b.people)
                };
                Bar {
                    x: n(LEFT + i as f64 * slot + gap / 2.0),
                    width: n((slot - gap).max(0.5)),
                    people_y: n(baseline - people_h),
                    people_height: n(people_h),
                    bots_y: n(baseline - people_h - bots_h),
                    bots_height: n(bots_h),
                    title,
                }
            })
            .collect();
        let grid = (1..=Y_TICKS)
            .map(|k| {
                let value = top / Y_TICKS * k;
                Tick {
                    at: n(baseline - scale(value)),
                    label: value.to_string(),
                }
            })
            .collect();
        let every = buckets.len().div_ceil(X_LABELS).max(1);
        let times = buckets
            .iter()
            .enumerate()
            .filter(|(i, _)| i % every == 0)
            .map(|(i, b)| Tick {
                at: n(LEFT + i as f64 * slot),
                label: b.label.clone(),
            })
            .collect();
        BarChart {
            view_box: format!("0 0 {WIDTH} {HEIGHT}"),
            bars,
            grid,
            times,
            left: n(LEFT),
            right: n(WIDTH),
            baseline: n(baseline),
        }
    }
}

/// A row's small line of daily visits.
pub(super) struct Sparkline {
    /// The polyline's `points`, in a 70 × 20 drawing.
    pub(super) points: String,
    pub(super) total: i64,
}

impl Sparkline {
    pub(super) fn of(days: &[i64]) -> Sparkline {
        let (w, h) = (70.0, 20.0);
        let most = days.iter().copied().max().unwrap_or(0).max(1) as f64;
        let step = if days.len() > 1 {
            w / (days.len() - 1) as f64
        } else {
            0.0
        };
        let points = days
            .iter()
            .enumerate()
            .map(|(i, v)| {
                // A pixel inside the box at both ends, so the stroke is never cut.
                let y = 1.0 + (h - 2.0) * (1.0 - (*v).max(0) as f64 / most);
                format!("{},{}", n(i as f64 * step), n(y))
            })
            .collect::<Vec<_>>()
            .join(" ");
        Sparkline {
            points,
            total: days.iter().sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(people: i64, bots: i64) -> Bucket {
        Bucket {
            label: format!("b{people}"),
            people,
            bots,
        }
    }

    fn f(s: &str) -> f64 {
        s.parse().expect("a number")
    }

    #[test]
    fn the_tallest_bar_stays_inside_and_a_zero_has_no_height() {
        let chart = BarChart::of(&[bucket(0, 0), bucket(7, 0), bucket(3, 0)], false);
        let baseline = f(&chart.baseline);
        assert_eq!(f(&chart.bars[0].people_height), 0.0);
        let tallest = &chart.bars[1];
        assert!(f(&tallest.people_y) >= TOP, "{}", tallest.people_y);
        assert_eq!(f(&tallest.people_y) + f(&tallest.people_height), baseline);
        // 3 of 7 is under half the tallest, and the gridlines are whole: 2, 4, 6, 8.
        assert!(f(&chart.bars[2].people_height) < f(&tallest.people_height) / 2.0);
        let labels: Vec<_> = chart.grid.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["2", "4", "6", "8"]);
    }

    #[test]
    fn bots_stack_on_people_only_when_shown() {
        let shown = BarChart::of(&[bucket(4, 4)], true);
        let bar = &shown.bars[0];
        assert_eq!(f(&bar.people_height), f(&bar.bots_height));
        assert_eq!(f(&bar.bots_y) + f(&bar.bots_height), f(&bar.people_y));
        assert!(bar.title.contains("4 by bots"), "{}", bar.title);
        let hidden = BarChart::of(&[bucket(4, 4)], false);
        assert_eq!(f(&hidden.bars[0].bots_height), 0.0);
        assert!(!hidden.bars[0].title.contains("bots"));
        // Without bots, people fill the height.
        assert!(f(&hidden.bars[0].people_height) > f(&bar.people_height));
    }

    #[test]
    fn a_month_of_hours_gets_a_few_times_and_bars_that_fit() {
        let buckets: Vec<_> = (0..744).map(|i| bucket(i % 5, 0)).collect();
        let chart = BarChart::of(&buckets, false);
        assert_eq!(chart.bars.len(), 744);
        assert!(chart.times.len() <= X_LABELS, "{}", chart.times.len());
        let last = chart.bars.last().expect("a bar");
        assert!(f(&last.x) + f(&last.width) <= WIDTH + 0.1);
        // No buckets at all is an empty chart, not a division by zero.
        assert!(BarChart::of(&[], false).bars.is_empty());
    }

    #[test]
    fn ceilings_are_one_two_or_five_times_a_power_of_ten() {
        let got: Vec<_> = [0, 1, 2, 3, 6, 11, 499, 501]
            .into_iter()
            .map(nice_ceiling)
            .collect();
        assert_eq!(got, [1, 1, 2, 5, 10, 20, 500, 1000]);
        assert_eq!(nice_ceiling(i64::MAX), i64::MAX);
    }

    #[test]
    fn a_sparkline_rises_where_the_visits_are() {
        let line = Sparkline::of(&[0, 4, 2]);
        assert_eq!(line.total, 6);
        let ys: Vec<f64> = line
            .points
            .split(' ')
            .map(|p| f(p.split_once(',').expect("x,y").1))
            .collect();
        // SVG's y grows downwards: the busiest day is highest, a quiet day at the bottom.
        assert_eq!(ys, [19.0, 1.0, 10.0]);
        assert_eq!(Sparkline::of(&[0; 7]).total, 0);
    }
}

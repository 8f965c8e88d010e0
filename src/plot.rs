//! Line plots to PNG (plotters, bitmap backend), with the bundled DejaVu Sans font so
//! plotting needs no system fonts: vertex trajectories, force logs, timing histories.

use std::path::Path;
use std::sync::Once;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// One named series of (x, y) points.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// The (x, y) points, drawn in order as a polyline.
    pub points: Vec<(f64, f64)>,
}

/// Errors while plotting.
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot write the plot: {message}")]
pub struct PlotError {
    /// The image file being written.
    pub path: String,
    /// What went wrong (from the plotting backend).
    pub message: String,
}

static FONT: Once = Once::new();

fn register_font() {
    FONT.call_once(|| {
        // The bundled font is valid; a failure would only leave text unrendered.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            include_bytes!("../assets/fonts/DejaVuSans.ttf"),
        );
    });
}

/// Refuses a destination the image encoder would fail on with an unreadable message: a
/// directory, or a file in a directory that does not exist.
fn check_destination(path: &Path) -> Result<(), String> {
    if path.as_os_str().is_empty() {
        return Err("the path is empty".into());
    }
    if path.is_dir() {
        return Err("it is a directory; give the path of a PNG file to write".into());
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        // A bare file name: the current directory.
        _ => return Ok(()),
    };
    if !parent.exists() {
        return Err(format!("the directory {} does not exist", parent.display()));
    }
    if !parent.is_dir() {
        return Err(format!("{} is not a directory", parent.display()));
    }
    Ok(())
}

const COLORS: [RGBColor; 6] = [
    RGBColor(0, 0, 0),
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
];

/// An interval of x to shade behind the lines (contact along a path, say).
#[derive(Debug, Clone)]
pub struct Band {
    /// Where it starts.
    pub from: f64,
    /// Where it ends.
    pub to: f64,
}

/// Writes a line plot of `series` (first series black and thicker: the reference).
pub fn line_plot(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), PlotError> {
    shaded_line_plot(path, title, x_label, y_label, series, &[], "")
}

/// The chart the plots draw on: f64 x and y axes on a bitmap.
type Chart<'a, 'b> =
    ChartContext<'a, BitMapBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The extent `(x0, x1, y0, y1)` of the finite points of `series`, widened to a unit
/// interval on an axis with no finite point or a single value.
fn data_extent(series: &[Series]) -> (f64, f64, f64, f64) {
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for s in series {
        for &(x, y) in &s.points {
            if x.is_finite() && y.is_finite() {
                x0 = x0.min(x);
                x1 = x1.max(x);
                y0 = y0.min(y);
                y1 = y1.max(y);
            }
        }
    }
    // No finite points, or a single x: give the axis some extent.
    if !x0.is_finite() || x1 <= x0 {
        x0 = if x0.is_finite() { x0 } else { 0.0 };
        x1 = x0 + 1.0;
    }
    if !y0.is_finite() || y1 <= y0 {
        y0 = if y0.is_finite() { y0 } else { 0.0 };
        y1 = y0 + 1.0;
    }
    (x0, x1, y0, y1)
}

/// Draws the grid, the tick labels and the axis descriptions.
fn draw_axes(chart: &mut Chart<'_, '_>, x_label: &str, y_label: &str) -> Result<(), String> {
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style(("sans-serif", 18))
        .draw()
        .map_err(|e| e.to_string())
}

/// Shades each of `bands` from `lo` to `hi` (at least a thousandth of `x1 - x0` wide),
/// the first one labelled `band_label` in the legend.
fn draw_bands(
    chart: &mut Chart<'_, '_>,
    bands: &[Band],
    band_label: &str,
    (x0, x1): (f64, f64),
    (lo, hi): (f64, f64),
) -> Result<(), String> {
    let shade = RGBColor(214, 39, 40).mix(0.18);
    for (k, b) in bands.iter().enumerate() {
        // A band narrower than a pixel still shows.
        let to = b.to.max(b.from + 1e-3 * (x1 - x0));
        let drawn = chart
            .draw_series(std::iter::once(Rectangle::new(
                [(b.from, lo), (to, hi)],
                shade.filled(),
            )))
            .map_err(|e| e.to_string())?;
        if k == 0 {
            drawn.label(band_label.to_string()).legend(move |(x, y)| {
                Rectangle::new([(x, y - 6), (x + 24, y + 6)], shade.filled())
            });
        }
    }
    Ok(())
}

/// Draws each of `series` as a labelled polyline, the first black and thicker.
fn draw_lines(chart: &mut Chart<'_, '_>, series: &[Series]) -> Result<(), String> {
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let width = if i == 0 { 3 } else { 2 };
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(width),
            ))
            .map_err(|e| e.to_string())?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3))
            });
    }
    Ok(())
}

/// Draws the legend box.
fn draw_legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>) -> Result<(), String> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 18))
        .draw()
        .map_err(|e| e.to_string())
}

/// [`line_plot`] with the intervals `bands` shaded in light red behind the lines, named
/// `band_label` in the legend.
pub fn shaded_line_plot(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    bands: &[Band],
    band_label: &str,
) -> Result<(), PlotError> {
    register_font();
    let err = |e: String| PlotError {
        path: path.display().to_string(),
        message: e,
    };
    check_destination(path).map_err(err)?;
    let (x0, x1, y0, y1) = data_extent(series);
    let pad = 0.05 * (y1 - y0);
    let root = BitMapBackend::new(path, (1280, 720)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 28))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad))
        .map_err(|e| err(e.to_string()))?;
    draw_axes(&mut chart, x_label, y_label).map_err(err)?;
    let (lo, hi) = (y0 - pad, y1 + pad);
    draw_bands(&mut chart, bands, band_label, (x0, x1), (lo, hi)).map_err(err)?;
    draw_lines(&mut chart, series).map_err(err)?;
    draw_legend(&mut chart).map_err(err)?;
    root.present().map_err(|e| err(e.to_string()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_series() -> Vec<Series> {
        vec![Series {
            name: "y".into(),
            points: vec![(0.0, 0.0), (1.0, 1.0)],
        }]
    }

    #[test]
    fn refuses_a_directory_or_a_missing_parent_in_plain_words() {
        let dir = tempfile::tempdir().unwrap();
        let e = line_plot(dir.path(), "t", "x", "y", &one_series()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
        assert!(msg.contains("is a directory"), "{msg}");
        assert!(!msg.contains("ImageError"), "{msg}");

        let missing = dir.path().join("no-such-dir").join("plot.png");
        let e = line_plot(&missing, "t", "x", "y", &one_series()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(&missing.display().to_string()), "{msg}");
        assert!(msg.contains("does not exist"), "{msg}");
        assert!(!msg.contains("ImageError"), "{msg}");
        assert!(!missing.parent().unwrap().exists());

        // A parent that is a regular file.
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let under_file = file.join("plot.png");
        let e = line_plot(&under_file, "t", "x", "y", &one_series()).unwrap_err();
        assert!(e.to_string().contains("is not a directory"), "{e}");

        // A good path still plots.
        let ok = dir.path().join("plot.png");
        line_plot(&ok, "t", "x", "y", &one_series()).unwrap();
        assert!(std::fs::metadata(&ok).unwrap().len() > 0);
    }
}

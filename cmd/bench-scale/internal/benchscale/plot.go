package benchscale

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// seriesStyle draws each mode and kind alike in both panels.
var seriesStyle = map[string]struct {
	color  color.Color
	dashed bool
}{
	"gates-on gang":   {color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, false},
	"gates-on plain":  {color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, true},
	"gates-off gang":  {color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, false},
	"gates-off plain": {color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, true},
}

// Plot draws, against N, every mode and kind on log-log axes, in a 2x2
// grid: time to all bound and controller CPU (top), and that time split
// into the implementation's share (every pod created, every PodGroup final)
// and the scheduler's (the rest) (bottom), into path (.png or .svg).
func Plot(r Results, path string) error {
	var panels [4]*plot.Plot
	for i, spec := range []struct {
		title, ylabel string
		value         func(Phase) float64
	}{
		{"time from first create to all pods bound", "seconds", func(p Phase) float64 { return p.TimeToBound.Seconds() }},
		{"was-controller-manager CPU over the phase", "CPU seconds", func(p Phase) float64 { return p.CPU.Seconds() }},
		{"the implementation's share: to all pods created, PodGroups final", "seconds", func(p Phase) float64 { return p.ImplementationDone().Seconds() }},
		{"the scheduler's share: from then to all pods bound", "seconds", func(p Phase) float64 { return p.SchedulerShare().Seconds() }},
	} {
		var err error
		if panels[i], err = panel(r, spec.title, spec.ylabel, spec.value); err != nil {
			return err
		}
	}
	const w, h = 11 * vg.Inch, 9 * vg.Inch
	var c vg.CanvasWriterTo
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		c = vgsvg.New(w, h)
	case ".png":
		c = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	default:
		return fmt.Errorf("plot %s: want a .png or .svg file", path)
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	plots := [][]*plot.Plot{{panels[0], panels[1]}, {panels[2], panels[3]}}
	canvases := plot.Align(plots, tiles, dc)
	for i, row := range plots {
		for j, p := range row {
			p.Draw(canvases[i][j])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// panel is one log-log plot of value against N, a line per mode and kind.
func panel(r Results, title, ylabel string, value func(Phase) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "N (Deployments; StatefulSets are N/2)"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = nTicks(r.Ns()), logTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	drawn := 0
	for _, mode := range []Mode{GatesOn, GatesOff} {
		for _, kind := range []Kind{Gang, Plain} {
			var pts plotter.XYs
			for _, n := range r.Ns() {
				if ph, ok := r.find(mode, n, kind); ok && value(ph) > 0 {
					pts = append(pts, plotter.XY{X: float64(n), Y: value(ph)})
				}
			}
			if len(pts) == 0 {
				continue
			}
			name := fmt.Sprintf("%s %s", mode, kind)
			line, points, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, err
			}
			st := seriesStyle[name]
			line.Color, points.Color = st.color, st.color
			line.Width = vg.Points(1.5)
			if st.dashed {
				line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			p.Add(line, points)
			p.Legend.Add(name, line, points)
			drawn++
		}
	}
	if drawn == 0 {
		return nil, fmt.Errorf("%s: no completed phase with a positive value to draw", title)
	}
	// A log axis needs a range: one N (the quick mode), or one value, gets
	// a margin either side.
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		if ax.Min >= ax.Max && ax.Min > 0 {
			ax.Min, ax.Max = ax.Min/1.5, ax.Max*1.5
		}
	}
	return p, nil
}

// nTicks labels exactly the measured N.
type nTicks []int

func (t nTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, n := range t {
		if float64(n) >= min && float64(n) <= max {
			out = append(out, plot.Tick{Value: float64(n), Label: fmt.Sprint(n)})
		}
	}
	return out
}

// logTicks labels 1, 2 and 5 times each power of ten in range, so a log
// axis spanning less than a decade still has labels; a range holding fewer
// than two of those (one N, values 32 to 49) is labelled at its ends.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	out := roundTicks(min, max)
	if len(out) < 2 {
		out = nil
		for _, v := range []float64{min, max} {
			out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 3, 64)})
		}
	}
	return out
}

// roundTicks are 1, 2 and 5 times each power of ten in [min, max].
func roundTicks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= min && v <= max {
				out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return out
}

package dashboard

import (
	"fmt"
	"math"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// The throughput chart is drawn on the server as inline SVG: one stacked bar per minute
// (succeeded below, failed above), a y axis rounded to a readable maximum, and a title
// per bar that browsers show on hover. No script, no chart library.

// Chart geometry in SVG user units (the SVG scales to its container with viewBox).
const (
	chartWidth  = 960
	chartHeight = 220
	chartLeft   = 48 // room for the y labels
	chartRight  = 8
	chartTop    = 10
	chartBottom = 22 // room for the x labels
)

type chart struct {
	Width, Height int
	Bars          []chartBar
	GridLines     []chartLine
	XLabels       []chartLabel
	Baseline      float64
	Left, Right   float64
	Empty         bool // nothing finished in the hour
}

type chartBar struct {
	X, W              string
	HitY, HitH        string // the whole column, so hovering anywhere shows the title
	OKY, OKH          string
	FailY, FailH      string
	HasOK, HasFail    bool
	Title             string
	Succeeded, Failed int64
}

type chartLine struct {
	Y     string
	Label string
}

type chartLabel struct {
	X      string
	Label  string
	Anchor string
}

func newChart(buckets []store.ThroughputBucket, now time.Time) chart {
	plotW := float64(chartWidth - chartLeft - chartRight)
	plotH := float64(chartHeight - chartTop - chartBottom)
	base := float64(chartTop) + plotH
	c := chart{Width: chartWidth, Height: chartHeight, Baseline: base,
		Left: chartLeft, Right: chartWidth - chartRight}

	var peak int64
	for _, b := range buckets {
		peak = max(peak, b.Succeeded+b.Failed)
	}
	c.Empty = peak == 0
	top := niceCeiling(peak)
	scale := plotH / float64(top)

	for i := range 3 {
		v := top * int64(i) / 2
		c.GridLines = append(c.GridLines, chartLine{Y: coord(base - float64(v)*scale), Label: formatCount(v)})
	}

	n := len(buckets)
	if n == 0 {
		return c
	}
	slot := plotW / float64(n)
	gap := math.Min(2, slot/4)
	for i, b := range buckets {
		x := float64(chartLeft) + float64(i)*slot
		okH := float64(b.Succeeded) * scale
		failH := float64(b.Failed) * scale
		c.Bars = append(c.Bars, chartBar{
			X: coord(x + gap/2), W: coord(slot - gap), HitY: coord(chartTop), HitH: coord(plotH),
			OKY: coord(base - okH), OKH: coord(okH), HasOK: b.Succeeded > 0,
			FailY: coord(base - okH - failH), FailH: coord(failH), HasFail: b.Failed > 0,
			Succeeded: b.Succeeded, Failed: b.Failed,
			Title: fmt.Sprintf("%s UTC: %d succeeded, %d failed", b.Start.UTC().Format("15:04"), b.Succeeded, b.Failed),
		})
	}
	// X labels every quarter hour, as minutes before now.
	for i := 0; i <= n; i += n / 4 {
		label, anchor := fmt.Sprintf("−%dm", n-i), "middle"
		switch i {
		case 0:
			anchor = "start"
		case n:
			label, anchor = "now", "end"
		}
		c.XLabels = append(c.XLabels, chartLabel{X: coord(float64(chartLeft) + float64(i)*slot), Label: label, Anchor: anchor})
		if n < 4 {
			break
		}
	}
	return c
}

// niceCeiling rounds v up to 1, 2 or 5 times a power of ten (at least 1), so that the
// axis reads 0 / 50 / 100 rather than 0 / 43.5 / 87.
func niceCeiling(v int64) int64 {
	if v <= 1 {
		return 2
	}
	p := int64(1)
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []int64{1, 2, 5, 10} {
		if m*p >= v {
			if m*p%2 != 0 { // the middle grid line must be a whole number
				continue
			}
			return m * p
		}
	}
	return 10 * p
}

func coord(f float64) string { return fmt.Sprintf("%.1f", f) }

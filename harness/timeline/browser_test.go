package timeline

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The browser tests open timelines in a real headless Chromium. Without one
// they skip, unless CHAOSRUN_REQUIRE_CHROMIUM=1 (as in CI) makes them fail.
// Screenshots go to CHAOSRUN_SCREENSHOTS, default results/screenshots.

func browser(t testing.TB) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CHAOSRUN_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("no Chromium found (apt-get install chromium), and CHAOSRUN_REQUIRE_CHROMIUM=1 requires it")
		}
		t.Skip("no Chromium found: install Debian's chromium to run the browser tests (CHAOSRUN_REQUIRE_CHROMIUM=1 makes this a failure)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 900), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelCtx(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx), "start Chromium at %s", path)
	return ctx
}

func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CHAOSRUN_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "results", "screenshots")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// box is an element's place on the page.
type box struct {
	X, Y, W, H float64
	Class      string
}

func (b box) midX() float64 { return b.X + b.W/2 }
func (b box) midY() float64 { return b.Y + b.H/2 }

// boxScript measures the axis ticks and the elements a test asks for.
const boxScript = `(() => {
  const bx = el => { const r = el.getBoundingClientRect(); return {X: r.x, Y: r.y, W: r.width, H: r.height, Class: el.getAttribute('class') || ''}; };
  const one = sel => { const el = document.querySelector(sel); return el ? bx(el) : null; };
  return {
    ticks: [...document.querySelectorAll('#axis .tick')].map(g => ({us: +g.dataset.us, x: g.querySelector('line').getBoundingClientRect().x})),
    dup: one('#lanes [data-refs~="l8"].k-charge'),
    orphan: one('#lanes [data-refs~="l6"].k-result'),
    fault: one('#lanes .faults-over .fault[data-refs~="f1"] rect'),
    firstSession: one('#lanes [data-session="d60fc922f0c386e20ad915f1060ca678"] .row-bg'),
    secondSession: one('#lanes [data-session="184f76a1b56e355bc9f05107b6520fe3"] .row-bg'),
    lane: one('#lanes .lane[data-client="c1"] .lane-bg'),
  };
})()`

type boxes struct {
	Ticks []struct {
		US int64
		X  float64
	}
	Dup, Orphan, Fault, FirstSession, SecondSession, Lane *box
}

// xAt maps a time to a page x through the axis ticks' own positions.
func (b boxes) xAt(t *testing.T, us int64) float64 {
	t.Helper()
	require.GreaterOrEqual(t, len(b.Ticks), 2, "the axis has ticks")
	a, z := b.Ticks[0], b.Ticks[len(b.Ticks)-1]
	return a.X + float64(us-a.US)*(z.X-a.X)/float64(z.US-a.US)
}

// TestDoubleChargeTimelineInChromium opens the double-charge incident's
// timeline and checks that the duplicate charge, the orphaned result and the
// fault window are drawn where the ledger and the fault log put them.
func TestDoubleChargeTimelineInChromium(t *testing.T) {
	ctx := browser(t)
	page := filepath.Join(t.TempDir(), File)
	require.NoError(t, WriteFile(page, loadDoubleCharge(t)))
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.CSS("#lanes"))))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[boxes](boxScript))
	require.NoError(t, err)
	require.NotNil(t, got.Dup, "the duplicate charge (ledger n=8) is drawn")
	require.NotNil(t, got.Orphan, "the orphaned result (ledger n=6) is drawn")
	require.NotNil(t, got.Fault, "the fault window is drawn")
	near := func(want, got float64, what string) { assert.InDelta(t, want, got, 1.5, what) }

	assert.Contains(t, got.Dup.Class, "s-dup", "a duplicate is drawn red")
	near(got.xAt(t, 7729579), got.Dup.midX(), "the duplicate charge sits at ledger n=8's t_us")
	assert.True(t, within(got.Dup.midY(), got.SecondSession), "the duplicate charge is in the retry's session")

	assert.Contains(t, got.Orphan.Class, "s-orphan", "an orphaned result is drawn red")
	near(got.xAt(t, 4670139), got.Orphan.midX(), "the orphaned result sits at ledger n=6's t_us")
	assert.True(t, within(got.Orphan.midY(), got.FirstSession), "the orphaned result is in the abandoned session")

	near(got.xAt(t, 109179), got.Fault.X, "the fault window starts at its start_us")
	near(got.xAt(t, 6233234), got.Fault.X+got.Fault.W, "the fault window ends at its end_us")
	assert.LessOrEqual(t, got.Fault.Y, got.Lane.Y, "the fault window is shaded across the lane")
	assert.GreaterOrEqual(t, got.Fault.Y+got.Fault.H, got.Lane.Y+got.Lane.H)

	// The duplicate's evidence, clicked, selects its charges and shows
	// their ledger records.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`li.res[data-id="no_duplicate_side_effects"] a.ev[data-e="0"]`)), chromedp.WaitVisible(chromedp.CSS("#detail"))))
	// The selection is drawn on the next frame after the click: wait for
	// it rather than read the page at once (a loaded machine lags a frame).
	selected, err := chromedp.Run(ctx, chromedp.Poll[int](`document.querySelectorAll('#lanes .k-charge.sel').length || false`,
		chromedp.WithPollingTimeout(10*time.Second)))
	require.NoError(t, err, "some charge is selected after the click")
	detail, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#detail")))
	require.NoError(t, err)
	assert.Equal(t, 2, selected, "both charges of the order are selected")
	assert.Contains(t, detail, "ledger.jsonl n=8")
	assert.Contains(t, detail, `"kind": "charge"`)

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	shot := filepath.Join(screenshotDir(t), "double-charge-lb-idle.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot: %s", shot)
}

func within(y float64, b *box) bool { return b != nil && y >= b.Y && y <= b.Y+b.H }

// TestThousandClientsAggregate draws a run of 1,000 clients: its lanes
// aggregate into groups, and only the clients the evidence names keep a
// lane. How fast it draws is BenchmarkThousandClients' business.
func TestThousandClientsAggregate(t *testing.T) {
	ctx := browser(t)
	x := bigRun(1000, 5)
	x.Verdict = check.Judge(x.Input)
	page := filepath.Join(t.TempDir(), File)
	require.NoError(t, WriteFile(page, x))
	info, err := os.Stat(page)
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.CSS("#lanes"))))
	visible := time.Since(start)
	drawn, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.chaosrunTimeline.drawnAt`))
	require.NoError(t, err)
	phases, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](`({script: window.chaosrunTimeline.startedAt, parsed: window.chaosrunTimeline.parsedAt, drawn: window.chaosrunTimeline.drawnAt})`))
	require.NoError(t, err)
	t.Logf("script started %.0f ms, data parsed %.0f ms, drawn %.0f ms", phases["script"], phases["parsed"], phases["drawn"])
	groups, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#lanes .group').length`))
	require.NoError(t, err)
	lanes, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#lanes .lane').length`))
	require.NoError(t, err)
	t.Logf("1,000 clients, %d records, page %.1f MB: drawn %.0f ms after navigation began (%.0f ms to visible, as the test saw it)",
		len(x.Input.History)+len(x.Input.Ledger), float64(info.Size())/(1<<20), drawn, float64(visible.Milliseconds()))
	assert.InDelta(t, 30, groups, 3, "the clients are drawn as about 30 groups")
	assert.LessOrEqual(t, lanes, 12, "only the clients the evidence names get lanes of their own")

	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(screenshotDir(t), "thousand-clients.png"), png, 0o644))
}

// bigRun makes the records of a run of n clients making calls charges each,
// with five events, a stream break and a resume per call, and one order
// charged twice.
func bigRun(n, calls int) Experiment {
	var hist []history.Record
	var ledger []sideeffects.Record
	rec := func(r sideeffects.Record) {
		r.N, r.ID = int64(len(ledger)+1), fmt.Sprint(len(ledger)+1)
		ledger = append(ledger, r)
	}
	for c := 1; c <= n; c++ {
		client, session := fmt.Sprintf("c%d", c), fmt.Sprintf("s%d", c)
		t := int64(c * 37 % 1000 * 1000)
		rec(sideeffects.Record{TUS: t, Kind: sideeffects.KindSessionOpened, Session: session, Client: client})
		hist = append(hist, history.Record{TUS: t + 100, Client: client, Kind: history.KindSessionNew, Session: session})
		for k := 1; k <= calls; k++ {
			call, req := fmt.Sprintf("%s-%d", client, k), fmt.Sprint(k+1)
			at := t + int64(k)*1_000_000
			base := history.Record{Client: client, Call: call, Session: session, RequestID: req}
			add := func(h history.Record) { hist = append(hist, h) }
			h := base
			h.TUS, h.Kind, h.OrderID, h.Tool, h.Attempt = at, history.KindInvoke, call, "charge", 1
			add(h)
			rec(sideeffects.Record{TUS: at + 500, Kind: sideeffects.KindCallStarted, Session: session, Client: client, RequestID: req, Tool: "charge", OrderID: call})
			for e := int64(1); e <= 5; e++ {
				rec(sideeffects.Record{TUS: at + e*100_000, Kind: sideeffects.KindEventEmitted, Session: session, RequestID: req, EventID: e + 1, Seq: e})
				h := base
				h.TUS, h.Kind, h.EventID, h.Seq = at+e*100_000+300, history.KindEvent, e+1, e
				add(h)
				if e == 3 {
					h.TUS, h.Kind, h.Reason = at+e*100_000+400, history.KindStreamBreak, "reset"
					add(h)
					h.TUS, h.Kind, h.LastEventID = at+e*100_000+50_000, history.KindResume, e+1
					add(h)
				}
			}
			rec(sideeffects.Record{TUS: at + 800_000, Kind: sideeffects.KindCharge, Session: session, Client: client, RequestID: req, OrderID: call, AmountCents: 100})
			if c == 500 && k == 1 {
				rec(sideeffects.Record{TUS: at + 850_000, Kind: sideeffects.KindCharge, Session: session, Client: client, RequestID: req, OrderID: call, AmountCents: 100})
			}
			rec(sideeffects.Record{TUS: at + 900_000, Kind: sideeffects.KindResultWritten, Session: session, Client: client, RequestID: req, EventID: 7})
			rec(sideeffects.Record{TUS: at + 900_100, Kind: sideeffects.KindCallFinished, Session: session, RequestID: req, Reason: "ok"})
			h = base
			h.TUS, h.Kind, h.EventID, h.Result = at+900_500, history.KindOK, 7, history.ResultRead
			add(h)
		}
	}
	return Experiment{Name: fmt.Sprintf("%d-clients", n), Input: check.Input{History: hist, Ledger: ledger,
		Wall: time.Duration(math.Round(float64(calls)+1)) * time.Second}}
}

// BenchmarkThousandClients reports how long Chromium takes to draw the
// timeline of a 1,000-client run (target: under 2 s), in the page's own
// milliseconds from navigation to drawn, as ms/draw.
func BenchmarkThousandClients(b *testing.B) { benchDraw(b, 1000) }

// BenchmarkTenThousandClients is BenchmarkThousandClients for a run of
// 10,000 clients, the size of the scale experiments.
func BenchmarkTenThousandClients(b *testing.B) { benchDraw(b, 10000) }

func benchDraw(b *testing.B, clients int) {
	ctx := browser(b)
	x := bigRun(clients, 5)
	x.Verdict = check.Judge(x.Input)
	page := filepath.Join(b.TempDir(), File)
	start := time.Now()
	require.NoError(b, WriteFile(page, x))
	written := time.Since(start)
	info, err := os.Stat(page)
	require.NoError(b, err)
	var total float64
	for b.Loop() {
		require.NoError(b, chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.CSS("#lanes"))))
		drawn, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.chaosrunTimeline.drawnAt`))
		require.NoError(b, err)
		total += drawn
	}
	b.ReportMetric(total/float64(b.N), "ms/draw")
	b.ReportMetric(float64(info.Size())/(1<<20), "page-MB")
	b.ReportMetric(float64(written.Milliseconds()), "ms/write")
}

package main

import (
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// termProgress draws a progress bar on a terminal once work has taken more
// than about a second, so quick commands print nothing extra.
type termProgress struct {
	w     *os.File
	mu    sync.Mutex
	label string
	total int64
	done  int64
	start time.Time
	bar   *progressbar.ProgressBar
}

func newTermProgress(w *os.File) *termProgress { return &termProgress{w: w} }

// progressDelay is how long work runs before a bar appears (a var for tests).
var progressDelay = time.Second

func (p *termProgress) Start(label string, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked()
	p.label, p.total, p.done, p.start = label, total, 0, time.Now()
}

func (p *termProgress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if p.bar == nil {
		if p.start.IsZero() || time.Since(p.start) < progressDelay {
			return
		}
		max := p.total
		if max <= 0 {
			max = -1
		}
		p.bar = progressbar.NewOptions64(max,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(p.label),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		_ = p.bar.Set64(p.done)
		return
	}
	_ = p.bar.Add64(n)
}

func (p *termProgress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked()
}

func (p *termProgress) finishLocked() {
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Clear()
		p.bar = nil
	}
	p.start = time.Time{}
}

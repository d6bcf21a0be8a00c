package cow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sync"
)

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// errDiffers stops a comparison at the first differing byte.
var errDiffers = errors.New("content differs")

// compareWriter compares what is written to it with what r holds.
type compareWriter struct {
	r   io.Reader
	buf []byte
}

func (c *compareWriter) Write(b []byte) (int, error) {
	if cap(c.buf) < len(b) {
		c.buf = make([]byte, len(b))
	}
	buf := c.buf[:len(b)]
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return 0, errDiffers
	}
	if !bytes.Equal(buf, b) {
		return 0, errDiffers
	}
	return len(b), nil
}

// applyWorkers is how many staged files are created and filled at once:
// reading and decompressing one blob and the file system's work for one
// file overlap with another's.
const applyWorkers = 3

// maxBatch is how many files of one directory go to one worker at most.
const maxBatch = 64

// flushBatch hands the batched files to one worker: files of the same
// directory go together (up to maxBatch), because creating files in one
// directory at once only makes them wait for each other's locks.
func (a *applier) flushBatch() {
	batch := a.batch
	if len(batch) == 0 {
		return
	}
	a.batch = nil
	a.filler.submit(func() error {
		for _, job := range batch {
			if err := a.stageFile(job); err != nil {
				return err
			}
		}
		return nil
	})
}

// fillJob is a file to stage with its target content.
type fillJob struct {
	p        string // the target path
	dir, tmp string // the staging file's directory and name
	t        NodeState
}

// stageFile creates the staging file of job, writes the blob into it, sets
// its mode, then closes it (syncfs) or hands it to the syncer. A file that
// fails is removed.
func (a *applier) stageFile(job fillJob) error {
	d, err := a.dirs.get(job.dir)
	if err != nil {
		return fmt.Errorf("apply %s: %w", job.p, err)
	}
	defer a.dirs.release(d)
	f, err := d.createTemp(job.tmp)
	if err != nil {
		return fmt.Errorf("apply %s: %w", job.p, err)
	}
	err = a.fillFile(f, job.t)
	if err == nil {
		// Before the rename, and after the last write (which would drop
		// security.capability).
		if xerr := keepXattrs(d, path.Base(job.p), job.tmp); xerr != nil {
			f.Close()
			_ = d.remove(job.tmp)
			return fmt.Errorf("apply %s: %w", job.p, xerr)
		}
	}
	switch {
	case err != nil:
		f.Close()
	case useSyncFS:
		err = f.Close()
	default:
		a.syncer.add(f) // fsynced and closed in the background
	}
	if err != nil {
		_ = d.remove(job.tmp)
		return checkBlob(job.p, job.t.Blob, err)
	}
	return nil
}

// pool runs jobs on a few goroutines. Once a job failed, the jobs not yet
// started are dropped; wait returns the first error.
type pool struct {
	jobs chan func() error
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
}

func newPool(n int) *pool {
	p := &pool{jobs: make(chan func() error, 2*n)}
	for range n {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for job := range p.jobs {
				if p.failed() != nil {
					continue
				}
				if err := job(); err != nil {
					p.mu.Lock()
					if p.err == nil {
						p.err = err
					}
					p.mu.Unlock()
				}
			}
		}()
	}
	return p
}

// submit queues a job (it blocks while the queue is full).
func (p *pool) submit(job func() error) { p.jobs <- job }

// failed returns the first error of a job so far.
func (p *pool) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// wait returns once every submitted job is done or dropped.
func (p *pool) wait() error {
	close(p.jobs)
	p.wg.Wait()
	return p.failed()
}

// useSyncFS selects syncfs (where the system has it) over per-file fsyncs;
// tests switch it off to exercise the other way.
var useSyncFS = canSyncFS

// syncWorkers is how many staged files are fsynced at once: concurrent
// fsyncs share journal commits, which makes many small files much cheaper
// to make durable than one fsync after another.
const syncWorkers = 32

// syncer fsyncs and closes staged files in the background.
type syncer struct {
	files chan *os.File
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error
}

func newSyncer() *syncer {
	s := &syncer{files: make(chan *os.File, syncWorkers)}
	for range syncWorkers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for f := range s.files {
				err := f.Sync()
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					s.mu.Lock()
					if s.err == nil {
						s.err = err
					}
					s.mu.Unlock()
				}
			}
		}()
	}
	return s
}

func (s *syncer) add(f *os.File) { s.files <- f }

// wait returns once every added file is synced and closed.
func (s *syncer) wait() error {
	close(s.files)
	s.wg.Wait()
	return s.err
}

package journal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/timeagent-dev/timeagent/tasks"
)

// maxConflictRetries bounds how often a transaction is rerun after a
// conflict with a concurrent one; conflictPause spreads the reruns out.
const maxConflictRetries = 100

func conflictPause(attempt int) {
	time.Sleep(time.Duration(1+rand.IntN(attempt+1)) * 50 * time.Microsecond)
}

// Update runs fn in one atomic transaction and syncs it to disk before
// returning, so what fn wrote survives a crash or power loss. If a
// concurrent Update changed a key fn read, fn runs again in a fresh
// transaction, so fn must only have effects through tx.
func (j *Journal) Update(fn func(tx *Tx) error) (err error) {
	if j.closed.Load() {
		return fmt.Errorf("update journal %s: %w", j.dir, errClosed)
	}
	if j.readOnly {
		return fmt.Errorf("update journal %s: %w", j.dir, errReadOnly)
	}
	if err := checkSpace(j.dir, 0, spaceReserve); err != nil {
		return fmt.Errorf("update journal %s: %w", j.dir, err)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	for attempt := 0; ; attempt++ {
		err = j.update(fn)
		if !errors.Is(err, badger.ErrConflict) || attempt == maxConflictRetries {
			break
		}
		conflictPause(attempt)
	}
	if err != nil {
		return err
	}
	if err := j.db.Sync(); err != nil {
		return fmt.Errorf("sync journal %s: %w", j.dir, writeError(err))
	}
	return nil
}

func (j *Journal) update(fn func(tx *Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if pe, ok := r.(txPanic); ok {
				panic(pe.v) // a panic in the caller's fn is the caller's bug
			}
			err = fmt.Errorf("update journal %s: %w: badger panicked: %v", j.dir, ErrCorrupt, r)
		}
	}()
	return j.db.Update(func(txn *badger.Txn) error {
		tx := &Tx{txn: txn}
		if err := callFn(fn, tx); err != nil {
			return err
		}
		return nil
	})
}

// txPanic marks a panic raised by the caller's function, which Update
// re-raises instead of reporting it as damage.
type txPanic struct{ v any }

func callFn(fn func(tx *Tx) error, tx *Tx) (err error) {
	panicking := true
	defer func() {
		if panicking {
			panic(txPanic{recover()})
		}
	}()
	err = fn(tx)
	panicking = false
	return err
}

// Tx is an atomic, durable change of small records.
type Tx struct {
	txn *badger.Txn
}

func (tx *Tx) setJSON(what string, key []byte, v any) error {
	b, err := encodeJSON(v)
	if err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	if err := tx.txn.Set(key, b); err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	return nil
}

// PutTask writes a task record.
func (tx *Tx) PutTask(t tasks.Task) error {
	b, err := encodeTask(t)
	if err != nil {
		return fmt.Errorf("write task %d: %w", t.ID, err)
	}
	if err := tx.txn.Set(taskKey(t.ID), b); err != nil {
		return fmt.Errorf("write task %d: %w", t.ID, err)
	}
	return nil
}

// SetState writes the root's position.
func (tx *Tx) SetState(s State) error { return tx.setJSON("state", keyState, s) }

// PutSession writes a session record.
func (tx *Tx) PutSession(s Session) error {
	return tx.setJSON(fmt.Sprintf("session %d", s.ID), sessionKey(s.ID), s)
}

// NextSessionID allocates a session id (ids start at 1).
func (tx *Tx) NextSessionID() (id uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			id, err = 0, fmt.Errorf("read session counter: %w: badger panicked: %v", ErrCorrupt, r)
		}
	}()
	var last uint64
	v, err := getCopy(tx.txn, keySessionSeq)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return 0, fmt.Errorf("read session counter: %w", err)
	default:
		if last, err = parseU64(v); err != nil {
			return 0, fmt.Errorf("read session counter: %w", err)
		}
	}
	next := last + 1
	if err := tx.txn.Set(keySessionSeq, u64(next)); err != nil {
		return 0, fmt.Errorf("write session counter: %w", err)
	}
	return next, nil
}

// PutIntent records an apply about to start.
func (tx *Tx) PutIntent(in Intent) error { return tx.setJSON("intent", keyIntent, in) }

// DeleteIntent removes the intent after its apply ended.
func (tx *Tx) DeleteIntent() error {
	if err := tx.txn.Delete(keyIntent); err != nil {
		return fmt.Errorf("delete intent: %w", err)
	}
	return nil
}

// PutAction appends an action record (seq already set by the caller).
func (tx *Tx) PutAction(a Action) error {
	return tx.setJSON(fmt.Sprintf("action %d/%d", a.Session, a.Seq), actionKey(a.Session, a.Seq), a)
}

// State reads the root's position inside the transaction (zero State when
// none is stored), so a read-modify-write of it is atomic: a concurrent
// Update that changed it makes this one rerun.
func (tx *Tx) State() (s State, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = State{}, fmt.Errorf("read state: %w: badger panicked: %v", ErrCorrupt, r)
		}
	}()
	v, err := getCopy(tx.txn, keyState)
	if errors.Is(err, ErrNotFound) {
		return State{}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("read state: %w", err)
	}
	if err := decodeJSON("state", v, &s); err != nil {
		return State{}, fmt.Errorf("read state: %w", err)
	}
	return s, nil
}

// Task reads one task inside the transaction (ErrNotFound if missing).
func (tx *Tx) Task(id tasks.ID) (t tasks.Task, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = tasks.Task{}, fmt.Errorf("read task %d: %w: badger panicked: %v", id, ErrCorrupt, r)
		}
	}()
	v, err := getCopy(tx.txn, taskKey(id))
	if err != nil {
		return tasks.Task{}, fmt.Errorf("read task %d: %w", id, err)
	}
	if t, err = decodeTask(describeKey(taskKey(id)), v); err != nil {
		return tasks.Task{}, fmt.Errorf("read task %d: %w", id, err)
	}
	return t, nil
}

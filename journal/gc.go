package journal

import (
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/timeagent-dev/timeagent/tasks"
)

// The records of a garbage collection (cow.GC decides what to drop; this
// file stores its plan and does its steps). A gc runs in phases, each
// idempotent, so a gc killed at any point is finished by running the plan
// again (cow.FinishGC):
//
//	stage:  the new layer of every rewired task is written under 'L'
//	        (the old layers stay untouched, so staging can be redone);
//	        a complete staged layer gets its mark ('L' task alone).
//	switch: each rewired task's layer is replaced by its staged one and
//	        its record gets the new parent and path count; the mark goes.
//	drop:   the sessions forget the dropped tasks; their layers, lost
//	        markers and records are deleted.
//	sweep:  blobs no layer and no stat entry refers to are deleted, then
//	        chunks no blob is made of.
//
// While a plan is stored, verify accepts the half-done state of the
// tasks it names (a layer whose length differs from its record, a dropped
// task whose parent is gone).

// GC phases (GCPlan.Phase).
const (
	GCStage  = "stage"
	GCSwitch = "switch"
	GCDrop   = "drop"
	GCSweep  = "sweep"
)

// GCPlan is a garbage collection in progress, stored durably before its
// first change and deleted after its last.
type GCPlan struct {
	Started time.Time `json:"started"`
	Phase   string    `json:"phase"`
	// Squash is the task whose state becomes the base's (0: the base stays).
	Squash tasks.ID `json:"squash,omitempty"`
	// Drop are the tasks removed from the history.
	Drop []tasks.ID `json:"drop"`
	// Rewire are the kept tasks that get a new parent and a new layer.
	Rewire []Rewire `json:"rewire"`
}

// Rewire is a kept task's new place: its parent after the gc. Its new
// layer goes from the parent's state (the Squash task's for the base) to
// its own.
type Rewire struct {
	ID     tasks.ID `json:"id"`
	Parent tasks.ID `json:"parent"`
}

// GCPlan returns the unfinished gc, or nil when there is none.
func (j *Journal) GCPlan() (*GCPlan, error) {
	var p GCPlan
	err := j.getJSON("read gc plan", keyGC, &p)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// PutGCPlan stores the plan (a new one or its next phase).
func (tx *Tx) PutGCPlan(p GCPlan) error { return tx.setJSON("gc plan", keyGC, p) }

// DeleteGCPlan removes the plan after its last phase.
func (tx *Tx) DeleteGCPlan() error {
	if err := tx.txn.Delete(keyGC); err != nil {
		return fmt.Errorf("delete gc plan: %w", err)
	}
	return nil
}

// HasLostChanges reports whether some task lost changes in a salvage.
func (j *Journal) HasLostChanges() (bool, error) {
	found := false
	err := j.view("find lost changes", func(txn *badger.Txn) error {
		opts := badger.IteratorOptions{Prefix: []byte{prefixLost}}
		it := txn.NewIterator(opts)
		defer it.Close()
		it.Rewind()
		found = it.Valid()
		return nil
	})
	return found, err
}

// Staged reports whether task id's staged layer is complete and returns it.
func (j *Journal) Staged(id tasks.ID) (changes []Change, complete bool, err error) {
	op := fmt.Sprintf("read staged layer %d", id)
	err = j.view(op, func(txn *badger.Txn) error {
		_, err := txn.Get(stagedPrefix(id))
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
			return nil
		case err != nil:
			return readError(err)
		}
		complete = true
		return nil
	})
	if err != nil || !complete {
		return nil, false, err
	}
	err = j.scan(op, stagedPrefix(id), func(k, v []byte) error {
		if len(k) == layerKeyMin {
			return nil
		}
		c, err := decodeChange(string(k[layerKeyMin:]), v)
		if err != nil {
			return err
		}
		changes = append(changes, c)
		return nil
	})
	return changes, err == nil, err
}

// PutStaged writes task id's staged layer and then its complete mark.
func (j *Journal) PutStaged(id tasks.ID, changes []Change) error {
	op := fmt.Sprintf("write staged layer %d", id)
	err := j.batch(op, func(wb *spaceBatch) error {
		for _, c := range changes {
			if err := wb.Set(stagedKey(id, c.Path), encodeChange(c)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return j.batch(op, func(wb *spaceBatch) error { return wb.Set(stagedPrefix(id), []byte{1}) })
}

// SwitchLayer replaces task t's layer by its staged one (t.Files is set to
// its length) and writes t's record, removing the complete mark in the same
// transaction; the staged records are deleted after. Run again after a
// crash, it does the same: the staged layer stays until the mark is gone.
func (j *Journal) SwitchLayer(t tasks.Task, staged []Change) error {
	op := fmt.Sprintf("switch layer %d", t.ID)
	keep := make(map[string]bool, len(staged))
	for _, c := range staged {
		keep[c.Path] = true
	}
	var stale []string
	err := j.scan(op, layerPrefix(t.ID), func(k, _ []byte) error {
		if p := string(k[layerKeyMin:]); !keep[p] {
			stale = append(stale, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := j.DeleteChanges(t.ID, stale); err != nil {
		return err
	}
	if err := j.PutChanges(t.ID, staged); err != nil {
		return err
	}
	t.Files = len(staged)
	err = j.Update(func(tx *Tx) error {
		if err := tx.PutTask(t); err != nil {
			return err
		}
		if err := tx.txn.Delete(stagedPrefix(t.ID)); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return j.cleanStaged(op, stagedPrefix(t.ID))
}

// CleanStaged deletes the staged records of every task whose staged layer
// has no complete mark: those of finished switches, and half-written ones.
func (j *Journal) CleanStaged() error {
	return j.cleanStaged("clean staged layers", []byte{prefixStaged})
}

func (j *Journal) cleanStaged(op string, prefix []byte) error {
	var keys [][]byte
	err := j.view(op, func(txn *badger.Txn) error {
		opts := badger.IteratorOptions{Prefix: prefix}
		it := txn.NewIterator(opts)
		defer it.Close()
		marked := map[string]bool{}
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().KeyCopy(nil)
			if len(k) == layerKeyMin && k[0] == prefixStaged {
				marked[string(k)] = true
				continue
			}
			if k[0] == prefixStaged && len(k) > layerKeyMin && marked[string(k[:layerKeyMin])] {
				continue // a complete staged layer still to switch
			}
			keys = append(keys, k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return j.batch(op, func(wb *spaceBatch) error {
		for _, k := range keys {
			if err := wb.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// DropTasks deletes the layers, lost markers and records of ids. Layers go
// first, records last, so a crash leaves records (which verify accepts
// while the gc plan names them) and never a layer without its task.
func (j *Journal) DropTasks(ids []tasks.ID) error {
	op := "drop tasks"
	var keys [][]byte
	err := j.view(op, func(txn *badger.Txn) error {
		for _, id := range ids {
			opts := badger.IteratorOptions{Prefix: layerPrefix(id)}
			it := txn.NewIterator(opts)
			for it.Rewind(); it.Valid(); it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			it.Close()
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		keys = append(keys, lostKey(id))
	}
	for _, id := range ids {
		keys = append(keys, taskKey(id))
	}
	return j.batch(op, func(wb *spaceBatch) error {
		for _, k := range keys {
			if err := wb.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// ForgetTasks removes ids from every session's task list in one update,
// and gives a session whose base task is one of them the base newBase says.
func (j *Journal) ForgetTasks(ids []tasks.ID, newBase func(tasks.ID) tasks.ID) error {
	drop := make(map[tasks.ID]bool, len(ids))
	for _, id := range ids {
		drop[id] = true
	}
	sessions, err := j.Sessions()
	if err != nil {
		return err
	}
	return j.Update(func(tx *Tx) error {
		for _, s := range sessions {
			kept := s.Tasks[:0:0]
			for _, id := range s.Tasks {
				if !drop[id] {
					kept = append(kept, id)
				}
			}
			if len(kept) == len(s.Tasks) && !drop[s.Base] {
				continue
			}
			s.Tasks = kept
			if drop[s.Base] {
				s.Base = newBase(s.Base)
			}
			if err := tx.PutSession(s); err != nil {
				return err
			}
		}
		return nil
	})
}

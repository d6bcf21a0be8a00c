package journal

import (
	"slices"
	"sort"

	"github.com/dgraph-io/badger/v4"
	"github.com/timeagent-dev/timeagent/tasks"
)

// uses fills in UsedBy of every damaged or missing blob and chunk: one more
// pass over the layers and the stat cache, only when there is such damage.
func (v *verifier) uses() error {
	want := map[BlobRef][]BlobUse{}
	for _, d := range v.damage {
		if d.blob != nil {
			want[*d.blob] = nil
		}
		if d.chunk != nil {
			for _, r := range v.chunkBlobs[*d.chunk] {
				want[r] = nil
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	use := func(r BlobRef, u BlobUse) {
		if us, ok := want[r]; ok {
			want[r] = append(us, u)
		}
	}
	err := v.j.view("find blob uses", func(txn *badger.Txn) error {
		for _, prefix := range []byte{prefixLayer, prefixStat} {
			opts := badger.DefaultIteratorOptions
			opts.Prefix = []byte{prefix}
			it := txn.NewIterator(opts)
			for it.Rewind(); it.Valid(); it.Next() {
				item := it.Item()
				key := item.KeyCopy(nil)
				val, err := item.ValueCopy(nil)
				if err != nil {
					continue // reported by records
				}
				var d Damage
				locate(&d, key)
				if prefix == prefixStat {
					if e, err := decodeStatEntry(val); err == nil && e.Kind == File {
						use(e.Blob, BlobUse{In: UseStat, Path: d.Path})
					}
					continue
				}
				if len(key) < layerKeyMin {
					continue
				}
				c, err := decodeChange(d.Path, val)
				if err != nil {
					continue
				}
				if c.Before.Kind == File {
					use(c.Before.Blob, BlobUse{In: UseBefore, Task: d.Task, Path: d.Path})
				}
				if c.After.Kind == File {
					use(c.After.Blob, BlobUse{In: UseAfter, Task: d.Task, Path: d.Path})
				}
			}
			it.Close()
		}
		return nil
	})
	if err != nil {
		return err
	}
	needed := v.applyNeeds()
	for i := range v.damage {
		d := &v.damage[i]
		var refs []BlobRef
		if d.blob != nil {
			refs = append(refs, *d.blob)
		}
		if d.chunk != nil {
			refs = append(refs, v.chunkBlobs[*d.chunk]...)
		}
		for _, r := range refs {
			d.UsedBy = append(d.UsedBy, want[r]...)
		}
		for _, u := range d.UsedBy {
			if u.In != UseStat && needed(u) {
				d.NeededByApply = true
			}
		}
		sort.SliceStable(d.UsedBy, func(a, b int) bool {
			x, y := d.UsedBy[a], d.UsedBy[b]
			if x.Task != y.Task {
				return x.Task < y.Task
			}
			if x.Path != y.Path {
				return x.Path < y.Path
			}
			return x.In < y.In
		})
	}
	return nil
}

// applyNeeds returns a test of whether the unfinished apply (the intent)
// restores a use's state: the use is in a task on the walk from the
// intent's From to its To, and, by MakePlan's rule, that task's layer gives
// the path its target state (the last task down the walk touching the path,
// else the task up the walk touching it closest to the common ancestor).
func (v *verifier) applyNeeds() func(BlobUse) bool {
	in := v.intent
	if in == nil {
		return func(BlobUse) bool { return false }
	}
	up, down, ok := v.walk(in.From, in.To)
	if !ok {
		return func(BlobUse) bool { return false }
	}
	touched := func(id tasks.ID, p string) bool {
		found := false
		_ = v.j.view("find layer change", func(txn *badger.Txn) error {
			_, err := txn.Get(layerKey(id, p))
			found = err == nil
			return nil
		})
		return found
	}
	return func(u BlobUse) bool {
		for i := len(down) - 1; i >= 0; i-- {
			if touched(down[i], u.Path) {
				return down[i] == u.Task && u.In == UseAfter
			}
		}
		for i := len(up) - 1; i >= 0; i-- {
			if touched(up[i], u.Path) {
				return up[i] == u.Task && u.In == UseBefore
			}
		}
		return false
	}
}

// walk is the tasks from a up to the common ancestor of a and b (Up, from
// a) and from there down to b (Down, towards b), from the parent links
// verified; ok is false when they do not lead to the base.
func (v *verifier) walk(a, b tasks.ID) (up, down []tasks.ID, ok bool) {
	chain := func(id tasks.ID) ([]tasks.ID, bool) {
		var out []tasks.ID
		for id != tasks.Base {
			if len(out) > len(v.parents) || !v.taskIDs[id] {
				return nil, false // a cycle or a missing task
			}
			out = append(out, id)
			id = v.parents[id]
		}
		return out, true
	}
	ca, okA := chain(a)
	cb, okB := chain(b)
	if !okA || !okB {
		return nil, nil, false
	}
	onA := map[tasks.ID]bool{tasks.Base: true}
	for _, id := range ca {
		onA[id] = true
	}
	common := tasks.Base
	for _, id := range cb {
		if onA[id] {
			common = id
			break
		}
		down = append(down, id)
	}
	slices.Reverse(down)
	for _, id := range ca {
		if id == common {
			break
		}
		up = append(up, id)
	}
	return up, down, true
}

package fs

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestUnmountCutsOffBusyWriter: a process inside the mount keeps writing
// while the overlay is unmounted (a mount it keeps busy is detached
// lazily). Once Unmount has returned, nothing more is recorded and nothing
// reaches the real tree: the layer read next is final.
func TestUnmountCutsOffBusyWriter(t *testing.T) {
	o, cleanup := setupOverlay(t, fillSample)
	defer cleanup()
	w := exec.Command("sh", "-c", `i=0; while :; do echo "$i" >> busy.txt; i=$((i+1)); sleep 0.01; done`)
	w.Dir = o.root
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { w.Process.Kill(); w.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if layer, _ := o.j.Layer(1); len(layer) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer's first change was never recorded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := o.Unmount(); err != nil {
		t.Fatal(err)
	}
	first, err := o.j.Layer(1)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	again, err := o.j.Layer(1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, again) {
		t.Fatalf("recorded after Unmount returned:\nthen %+v\nnow  %+v", first, again)
	}
	if _, err := os.Lstat(filepath.Join(o.root, "busy.txt")); err == nil {
		t.Fatal("the writer reached the real tree")
	}
}

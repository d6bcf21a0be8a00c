package session

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// stateDir makes a temporary state dir. Its cleanup removes entries one by
// one: os.RemoveAll fails under wine, where this test also runs.
func stateDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "timeagent-control-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTree(d) })
	return d
}

func removeTree(p string) {
	if ents, err := os.ReadDir(p); err == nil {
		for _, e := range ents {
			removeTree(filepath.Join(p, e.Name()))
		}
	}
	os.Remove(p)
}

// TestControlChannel: a command reaches the handler and its answer comes
// back, a slow one too (heartbeats keep the client waiting), and a client
// that connects and sends nothing does not hold Close.
func TestControlChannel(t *testing.T) {
	addr := ControlAddr(stateDir(t))
	srv, err := Serve(addr, func(req Request) Response {
		if len(req.Argv) > 0 && req.Argv[0] == "slow" {
			time.Sleep(3 * Heartbeat)
		}
		return Response{Stdout: strings.Join(req.Argv, " ") + "\n", Code: 3}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if runtime.GOOS != "windows" {
		fi, err := os.Lstat(filepath.Dir(addr))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("socket directory %s: %v %v", filepath.Dir(addr), fi, err)
		}
	}
	resp, err := Call(addr, Request{Argv: []string{"status", "--json"}}, 0)
	if err != nil || resp.Stdout != "status --json\n" || resp.Code != 3 {
		t.Fatalf("call: %+v %v", resp, err)
	}
	resp, err = Call(addr, Request{Argv: []string{"slow"}}, 2*Heartbeat)
	if err != nil || resp.Stdout != "slow\n" {
		t.Fatalf("slow call: %+v %v", resp, err)
	}

	idle, err := Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	half, err := Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	if _, err := half.Write([]byte(`{"argv":["sta`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the session accept them
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for clients that send nothing")
	}
	t.Logf("Close returned %v after it was called, beside two idle clients", time.Since(start))
	if _, err := Call(addr, Request{Argv: []string{"status"}}, 0); !errors.Is(err, ErrNoSession) {
		t.Fatalf("call after Close: %v, want ErrNoSession", err)
	}
}

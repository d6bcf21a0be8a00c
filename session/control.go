package session

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
)

// Request is one command forwarded to a running session over its control
// socket: the argv of a timeagent invocation (without the program name).
type Request struct {
	Argv []string `json:"argv"`
	Cwd  string   `json:"cwd"`
}

// Response is what the session answers: the output the command would have
// printed and its exit code.
type Response struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Code   int    `json:"code"`
}

// Handler answers one forwarded request.
type Handler func(Request) Response

// ControlAddr returns the control socket address of a state dir. Unix socket
// paths are limited to about 100 bytes; longer ones use a Linux abstract
// socket named after the state dir.
func ControlAddr(stateDir string) string {
	p := filepath.Join(stateDir, "control.sock")
	if len(p) < 100 {
		return p
	}
	return fmt.Sprintf("@timeagent-%016x", xxhash.Sum64String(stateDir))
}

// Server is a running control socket.
type Server struct {
	ln     net.Listener
	addr   string
	h      Handler
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
}

// Serve listens on addr and answers each connection's request with h, one at a
// time (the session's journal is not shared between concurrent commands).
func Serve(addr string, h Handler) (*Server, error) {
	if addr[0] != '@' {
		os.Remove(addr) // a socket left by a dead session
	}
	ln, err := net.Listen("unix", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on control socket %s: %w", addr, err)
	}
	if addr[0] != '@' {
		_ = os.Chmod(addr, 0o600)
	}
	s := &Server{ln: ln, addr: addr, h: h}
	s.wg.Add(1)
	go s.loop()
	return s, nil
}

// Addr is the address clients dial.
func (s *Server) Addr() string { return s.addr }

var serveMu sync.Mutex

func (s *Server) loop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			if err := checkPeer(c); err != nil {
				_ = json.NewEncoder(c).Encode(Response{Stderr: "timeagent: " + err.Error() + "\n", Code: 1})
				return
			}
			var req Request
			if err := json.NewDecoder(bufio.NewReader(c)).Decode(&req); err != nil {
				return
			}
			serveMu.Lock()
			resp := s.h(req)
			serveMu.Unlock()
			_ = json.NewEncoder(c).Encode(resp)
		}()
	}
}

// Close stops listening and waits for requests in progress.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	if s.addr[0] != '@' {
		os.Remove(s.addr)
	}
	return err
}

// ErrNoSession means nothing answers on the control socket.
var ErrNoSession = errors.New("no running session answers on the control socket")

// Call sends req to the session listening on addr and returns its answer.
func Call(addr string, req Request, timeout time.Duration) (Response, error) {
	c, err := net.DialTimeout("unix", addr, 5*time.Second)
	if err != nil {
		return Response{}, fmt.Errorf("%w (%s): %v", ErrNoSession, addr, err)
	}
	defer c.Close()
	if timeout > 0 {
		_ = c.SetDeadline(time.Now().Add(timeout))
	}
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return Response{}, fmt.Errorf("send to control socket %s: %w", addr, err)
	}
	var resp Response
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&resp); err != nil {
		return Response{}, fmt.Errorf("read from control socket %s: %w", addr, err)
	}
	return resp, nil
}

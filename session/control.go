package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Request is one command forwarded to a running session over its control
// channel: the argv of a timeagent invocation (without the program name).
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

// Deadlines of the control channel. A session answers whitespace every
// Heartbeat while a command runs (JSON decoders skip it), so a client tells a
// slow command from a session that stopped answering (SIGSTOP, Ctrl-Z).
const (
	// RequestTimeout is how long a client has to send its request once
	// connected; then the session hangs up.
	RequestTimeout = 5 * time.Second
	// ResponseTimeout is how long a client may take to read an answer.
	ResponseTimeout = 10 * time.Second
	// closingTimeout replaces ResponseTimeout once the session is ending.
	closingTimeout = 2 * time.Second
	// Heartbeat is how often a session working on a request sends a byte.
	Heartbeat = time.Second
	// SilenceTimeout is how long a client waits for any byte from the session.
	SilenceTimeout = 10 * time.Second
	// dialTimeout bounds connecting.
	dialTimeout = 5 * time.Second
	// maxRequest bounds the size of one request.
	maxRequest = 1 << 20
)

// Server is a running control channel.
type Server struct {
	ln    net.Listener
	addr  string
	h     Handler
	clean func() // removes what listen created
	wg    sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]bool // open connections; true once their request runs
}

// Serve listens on addr (see ControlAddr) and answers each connection's
// request with h, one at a time (the session's journal is not shared between
// concurrent commands). Every connection has deadlines: no client can hold
// the session or Close.
func Serve(addr string, h Handler) (*Server, error) {
	ln, clean, err := listen(addr)
	if err != nil {
		return nil, fmt.Errorf("start the control channel %s: %w", addr, err)
	}
	s := &Server{ln: ln, addr: addr, h: h, clean: clean, conns: map[net.Conn]bool{}}
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
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return
			}
			time.Sleep(50 * time.Millisecond) // EMFILE and the like: retry
			continue
		}
		if !s.track(c) {
			c.Close()
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			s.serveConn(c)
		}()
	}
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = false
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// start marks c's request as running; false once the session is ending.
func (s *Server) start(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = true
	return true
}

// writeDeadline is the deadline for an answer written now.
func (s *Server) writeDeadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return time.Now().Add(closingTimeout)
	}
	return time.Now().Add(ResponseTimeout)
}

func (s *Server) reply(c net.Conn, resp Response) {
	_ = c.SetWriteDeadline(s.writeDeadline())
	_ = json.NewEncoder(c).Encode(resp)
}

func (s *Server) serveConn(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(RequestTimeout))
	if err := checkPeer(c); err != nil {
		s.reply(c, Response{Stderr: "timeagent: " + err.Error() + "\n", Code: 1})
		return
	}
	var req Request
	if err := json.NewDecoder(io.LimitReader(c, maxRequest)).Decode(&req); err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if !s.start(c) {
		s.reply(c, Response{Stderr: "timeagent: the session is ending: run the command again when it has ended\n", Code: 1})
		return
	}
	stop := s.heartbeat(c)
	serveMu.Lock()
	resp := s.h(req)
	serveMu.Unlock()
	stop()
	s.reply(c, resp)
}

// heartbeat writes a newline to c every Heartbeat until stop is called.
func (s *Server) heartbeat(c net.Conn) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = c.SetWriteDeadline(s.writeDeadline())
				if _, err := c.Write([]byte{'\n'}); err != nil {
					return
				}
			}
		}
	}()
	return func() { close(done); <-exited }
}

// Close stops listening, hangs up on clients that have not sent a request,
// and waits for requests in progress (their answers get a short deadline).
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for c, running := range s.conns {
		if running {
			_ = c.SetWriteDeadline(time.Now().Add(closingTimeout))
		} else {
			c.Close()
		}
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	if s.clean != nil {
		s.clean()
	}
	return err
}

// ErrNoSession means nothing answers on the control channel.
var ErrNoSession = errors.New("no running session answers on the control channel")

// ErrSilent means the session accepted a command and then stopped answering.
var ErrSilent = errors.New("the session stopped answering")

// Call sends req to the session listening on addr and returns its answer. It
// gives up when the session sends nothing for silence (0: SilenceTimeout);
// a session working on the request sends a heartbeat every second.
func Call(addr string, req Request, silence time.Duration) (Response, error) {
	if silence <= 0 {
		silence = SilenceTimeout
	}
	c, err := Dial(addr, dialTimeout)
	if err != nil {
		return Response{}, fmt.Errorf("%w (%s): %v", ErrNoSession, addr, err)
	}
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(silence))
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return Response{}, fmt.Errorf("send to the control channel %s: %w", addr, err)
	}
	var resp Response
	if err := json.NewDecoder(&silenceReader{c: c, d: silence}).Decode(&resp); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return Response{}, fmt.Errorf("%w: nothing for %v on %s (is the session stopped, e.g. with Ctrl-Z? resume it with `fg` or `kill -CONT`)",
				ErrSilent, silence, addr)
		}
		return Response{}, fmt.Errorf("read from the control channel %s: %w", addr, err)
	}
	return resp, nil
}

// silenceReader reads c with a deadline that moves on with every read.
type silenceReader struct {
	c net.Conn
	d time.Duration
}

func (r *silenceReader) Read(p []byte) (int, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(r.d))
	return r.c.Read(p)
}

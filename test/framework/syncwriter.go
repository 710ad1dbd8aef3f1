package framework

import (
	"bytes"
	"sync"
)

// syncWriter serializes writes from a process's stdout and stderr.
type syncWriter struct {
	w *bytes.Buffer
}

var outputMu sync.Mutex

func (s *syncWriter) Write(b []byte) (int, error) {
	outputMu.Lock()
	defer outputMu.Unlock()
	return s.w.Write(b)
}

func (p *Process) output() string {
	outputMu.Lock()
	defer outputMu.Unlock()
	return p.log.String()
}

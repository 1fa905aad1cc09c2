package stack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// gcloudEnv is the environment of the gcloud emulator processes: never
// prompt, never phone home.
func (s *Supervisor) gcloudEnv() []string {
	return childEnv(s.cfg.StackDir, append(s.cfg.Env(),
		EnvVar{"CLOUDSDK_CORE_DISABLE_PROMPTS", "1"},
		EnvVar{"CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK", "true"},
		EnvVar{"CLOUDSDK_CORE_DISABLE_USAGE_REPORTING", "true"},
	))
}

// startPubSub starts `gcloud beta emulators pubsub start` and waits until it
// answers HTTP on its port.
func (s *Supervisor) startPubSub(ctx context.Context) (*proc, error) {
	dataDir := filepath.Join(s.cfg.StackDir, "pubsub")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	argv := []string{s.cfg.Gcloud, "beta", "emulators", "pubsub", "start",
		"--host-port=" + hostPort(s.cfg.PubSubPort), "--project=" + s.cfg.Project, "--data-dir=" + dataDir}
	return s.startEmulator(ctx, "pubsub", argv, s.cfg.PubSubPort)
}

// startFirestore starts `gcloud emulators firestore start` and waits until it
// answers HTTP on its port.
func (s *Supervisor) startFirestore(ctx context.Context) (*proc, error) {
	argv := []string{s.cfg.Gcloud, "emulators", "firestore", "start", "--host-port=" + hostPort(s.cfg.FirestorePort)}
	return s.startEmulator(ctx, "firestore", argv, s.cfg.FirestorePort)
}

func (s *Supervisor) startEmulator(ctx context.Context, name string, argv []string, port int) (*proc, error) {
	logPath := s.cfg.LogPath(name)
	p, err := startProc(name, argv, s.gcloudEnv(), s.cfg.StackDir, logPath)
	if err != nil {
		return nil, err
	}
	s.writeGroupFile(name, p.pgid)
	url := "http://" + hostPort(port) + "/"
	err = waitReady(ctx, 120*time.Second, p, func(ctx context.Context) error { return httpOK(ctx, url) })
	if err != nil {
		p.stop(10 * time.Second)
		return nil, err
	}
	return p, nil
}

// writeGroupFile records a child's process group id in .stack/pids (for
// humans and scripts/down; the supervisor finds strays by environment).
func (s *Supervisor) writeGroupFile(name string, pgid int) {
	dir := filepath.Join(s.cfg.StackDir, "pids")
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, name+".pgid"), []byte(strconv.Itoa(pgid)+"\n"), 0o644)
}

func (s *Supervisor) removeGroupFile(name string) {
	_ = os.Remove(filepath.Join(s.cfg.StackDir, "pids", name+".pgid"))
}

// waitReady polls check every 100ms until it succeeds, p (if any) exits, ctx
// ends or timeout passes.
func waitReady(ctx context.Context, timeout time.Duration, p *proc, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		last = check(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		if p != nil && p.exited() {
			return fmt.Errorf("process exited (%v) before it was ready", p.err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %w", timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// httpOK GETs url and expects a 2xx answer.
func httpOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

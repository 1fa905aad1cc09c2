/*
 Copyright 2021 The CloudEvents Authors
 SPDX-License-Identifier: Apache-2.0
*/

package client

import (
	"context"
	"net/http"

	"github.com/cloudevents/sdk-go/v2/binding"
	cecontext "github.com/cloudevents/sdk-go/v2/context"
	"github.com/cloudevents/sdk-go/v2/protocol"
	thttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"go.uber.org/zap"
)

func NewHTTPReceiveHandler(ctx context.Context, p *thttp.Protocol, fn interface{}) (*EventReceiver, error) {
	invoker, err := newReceiveInvoker(fn, noopObservabilityService{}, nil, nil, false) //TODO(slinkydeveloper) maybe not nil?
	if err != nil {
		return nil, err
	}

	return &EventReceiver{
		p:       p,
		invoker: invoker,
	}, nil
}

type EventReceiver struct {
	p       *thttp.Protocol
	invoker Invoker
}

func (r *EventReceiver) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	// noetl patch (PATCHES.md): the request's own message is invoked in the
	// request's goroutine with the request's context. Upstream spawns a
	// consumer per request that takes any message from the protocol's
	// shared channel and waits on its own request's context: a canceled
	// request leaves another request's send orphaned for ever and handlers
	// run under other requests' (canceled) contexts (cloudevents/sdk-go#1224,
	// #1332).
	r.p.ServeHTTPWithHandler(rw, req, func(msg binding.Message, respFn protocol.ResponseFn) {
		if err := r.invoker.Invoke(req.Context(), msg, respFn); err != nil {
			cecontext.LoggerFrom(context.TODO()).Debugw("failed to call Invoke", zap.Error(err))
		}
	})
}

module github.com/GoogleCloudPlatform/functions-framework-go

go 1.21

require (
	cloud.google.com/go/functions v1.19.3
	github.com/cloudevents/sdk-go/v2 v2.15.2
	github.com/google/go-cmp v0.7.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/json-iterator/go v1.1.10 // indirect
	github.com/modern-go/concurrent v0.0.0-20180228061459-e0a39a4cb421 // indirect
	github.com/modern-go/reflect2 v0.0.0-20180701023420-4b7aa43c6742 // indirect
	go.uber.org/atomic v1.4.0 // indirect
	go.uber.org/multierr v1.1.0 // indirect
	go.uber.org/zap v1.10.0 // indirect
)

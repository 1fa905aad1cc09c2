module github.com/cloudevents/sdk-go/v2

go 1.23.0

toolchain go1.23.8

require (
	github.com/google/go-cmp v0.7.0
	github.com/google/uuid v1.6.0
	github.com/json-iterator/go v1.1.12
	github.com/stretchr/testify v1.11.0
	github.com/valyala/bytebufferpool v1.0.0
	go.uber.org/zap v1.27.0
	golang.org/x/sync v0.16.0
	golang.org/x/time v0.12.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	github.com/niemeyer/pretty v0.0.0-20200227124842-a10e7caefd8e // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	gopkg.in/check.v1 v1.0.0-20200227125254-8fa46927fb4f // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

package toolspec

// GCS is the configuration of kind gcs: objects in Google Cloud Storage
// (NoETL's gcs executor: a local file to a gs:// destination, and the
// reverse; here also delete and list).
type GCS struct {
	Action      string         `json:"action,omitempty" alias:"operation" enum:"upload,put,write,download,get,read,delete,remove,list" default:"upload" doc:"What to do: upload (put, write) a local file or a value, download (get, read) an object, delete (remove) an object, or list a bucket's objects."`
	Auth        any            `json:"auth,omitempty" alias:"credential" doc:"A gcs credential: its name, or a mapping {endpoint, service_account_json, project}; default the process's client (ADC)."`
	Source      string         `json:"source,omitempty" doc:"upload: the local file to send; download and delete: the object's gs://bucket/object URI."`
	Destination string         `json:"destination,omitempty" alias:"target,path,local_path" doc:"upload: the object's gs://bucket/object URI; download: the local file to write (none: the object comes back in the result)."`
	URI         string         `json:"uri,omitempty" doc:"The object's gs://bucket/object URI (any action), or gs://bucket/prefix for list."`
	Bucket      string         `json:"bucket,omitempty" doc:"The bucket (with object, instead of a URI; list: the bucket listed)."`
	Object      string         `json:"object,omitempty" alias:"key,blob" doc:"The object's name in bucket."`
	Prefix      string         `json:"prefix,omitempty" doc:"list: only objects whose name starts with it."`
	Content     string         `json:"content,omitempty" doc:"upload: the object's text (instead of source)."`
	Data        any            `json:"data,omitempty" doc:"upload: a value stored as JSON (instead of source)."`
	ContentType string         `json:"content_type,omitempty" doc:"upload: the object's content type (default from the file's extension; JSON for data; else text/plain or application/octet-stream)."`
	Metadata    map[string]any `json:"metadata,omitempty" doc:"upload: the object's custom metadata (string values)."`
	MissingOK   bool           `json:"missing_ok,omitempty" doc:"delete: a missing object is not an error." default:"false"`
}

// Kind implements Spec.
func (GCS) Kind() string { return "gcs" }

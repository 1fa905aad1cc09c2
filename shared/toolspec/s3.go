package toolspec

// S3 is the configuration of kind s3: objects of an S3-compatible store —
// AWS S3, or Cloud Storage through its XML API with HMAC keys (this
// engine's own kind, shaped as the gcs kind: get, put, list, delete).
type S3 struct {
	Action      string         `json:"action,omitempty" alias:"operation" required:"action" enum:"get,download,read,put,upload,write,list,delete,remove" doc:"What to do: get (download, read) an object, put (upload, write) a local file or a value, list a bucket's objects, or delete (remove) an object."`
	Auth        any            `json:"auth,omitempty" alias:"credential" doc:"An s3 credential: its name, or a mapping {access_key_id, secret_access_key, session_token, region, endpoint}; none: anonymous requests."`
	Endpoint    string         `json:"endpoint,omitempty" doc:"The store's URL (e.g. https://storage.googleapis.com for Cloud Storage with HMAC keys); default the credential's, else AWS S3."`
	Region      string         `json:"region,omitempty" doc:"The bucket's region; default the credential's, else us-east-1."`
	URI         string         `json:"uri,omitempty" doc:"The object's s3://bucket/key URI (any action), or s3://bucket/prefix for list."`
	Bucket      string         `json:"bucket,omitempty" doc:"The bucket (with key, instead of a URI; list: the bucket listed)."`
	Key         string         `json:"key,omitempty" alias:"object" doc:"The object's key in bucket."`
	Prefix      string         `json:"prefix,omitempty" doc:"list: only keys that start with it."`
	Source      string         `json:"source,omitempty" doc:"put: the local file to send (in the task's workspace or a data root); get and delete: the object's s3:// URI."`
	Destination string         `json:"destination,omitempty" alias:"target,path,local_path" doc:"put: the object's s3:// URI; get: the local file to write (none: the object comes back in the result)."`
	Content     string         `json:"content,omitempty" doc:"put: the object's text (instead of source)."`
	Data        any            `json:"data,omitempty" doc:"put: a value stored as JSON (instead of source)."`
	ContentType string         `json:"content_type,omitempty" doc:"put: the object's content type (default from the file's extension; JSON for data; else text/plain or application/octet-stream)."`
	Metadata    map[string]any `json:"metadata,omitempty" doc:"put: the object's user metadata (string values)."`
	MissingOK   bool           `json:"missing_ok,omitempty" default:"false" doc:"delete: a missing object is not an error (S3 deletes are idempotent: the result says whether it existed)."`
}

// Kind implements Spec.
func (S3) Kind() string { return "s3" }

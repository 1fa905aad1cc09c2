/*
 Copyright 2021 The CloudEvents Authors
 SPDX-License-Identifier: Apache-2.0
*/

/*
Package format formats structured events.

The "application/cloudevents+json" format is built-in and always
available. Other formats may be added.
*/
package format

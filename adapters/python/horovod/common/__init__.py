"""What the framework bindings share: the core's C API, init and the job
layout, process sets, exceptions, build queries."""

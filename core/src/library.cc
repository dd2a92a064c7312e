// libhorovod.so is the core's rooms linked whole (see core/CMakeLists.txt);
// this file only gives the shared library a translation unit of its own.

// CProtobufC: protobuf-c's runtime, which the generated CastMessage code (CCastMessage) packs and unpacks with.
#include <protobuf-c/protobuf-c.h>

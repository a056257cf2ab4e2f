"""Tools the platform ships into its tuning and pipeline pods (in a ConfigMap): standard
library, protobuf and tritonclient only, as the Triton SDK image has them."""

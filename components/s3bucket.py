"""Where states written before the package was split find the S3 providers.

A dynamic resource's state holds its provider pickled by reference, and the engine loads the
provider from the *old* state to refresh or delete (pulumi/dynamic/__main__.py: Read and
Delete call get_provider on the state's properties). States written before 0.2 name
`components.s3bucket.BucketProvider` / `UploadProvider`; the provider process runs in the
project directory, where this file is `components/s3bucket.py`. Keep it while such states may
exist: the aliases ledger (core/aliases.py) lists it, and tests/live/test_s3bucket.py loads
those states' providers through it.
"""

from inference_platform.weights.s3.bucket import BucketProvider
from inference_platform.weights.s3.upload import UploadProvider

__all__ = ["BucketProvider", "UploadProvider"]

"""The S3 weight bucket and uploads: Pulumi dynamic providers on boto3.

client (boto3 client, one-line errors, Content-MD5), provider (what both providers share),
bucket (BucketProvider, S3Bucket), tree (the local source, listed and hashed), manifest (the
bucket's record of an upload, audit), upload (UploadProvider, WeightUpload, sync_tree), parallel.
"""

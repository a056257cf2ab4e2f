"""The S3 weight bucket and uploads: Pulumi dynamic providers on boto3."""

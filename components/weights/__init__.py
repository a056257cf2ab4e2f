"""Weight caches: the NFS file share and the S3 bucket that model repositories are read from."""

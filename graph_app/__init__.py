"""The generic Ray Serve application of the platform's inference graphs (see README.md).

Every RayService of a graph placed on Ray runs `graph_app.app:build` with the graph's steps
as the application's `args`: customers write no Ray code. The package imports Ray Serve and
what it installs (numpy, starlette), never Pulumi; a step image adds Triton's `tritonserver`.
"""

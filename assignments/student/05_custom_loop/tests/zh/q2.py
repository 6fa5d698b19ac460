from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 3

@test_case(points=None, hidden=False)
def test_dataset_fn(dataset_fn, tf):
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1, num_replicas_in_sync=4)
    ds = dataset_fn(context)
    assert ds is not None, 'dataset_fn 返回 None：把 ... 换成你的代码'
    first = next(iter(ds)).numpy().tolist()
    assert len(first) == 4, f'一批有 {len(first)} 个：16 分给 4 个副本，每个副本 4 个'


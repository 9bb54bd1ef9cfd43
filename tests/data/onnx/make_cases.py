"""Write tests/data/onnx/cases/: small ONNX models with inputs and expected
outputs in the layout of the ONNX backend test suite, for what that suite
leaves out: a symbolic batch dimension, asymmetric pads and auto_pad with
strides and dilations, 1-D windows, legacy broadcasting, Gemm's alpha, beta
and row-wise C, MatMul of rank 3, Softmax's 2-D coercion before opset 13,
BatchNormalization folded into a Conv with a residual add, PRelu per
channel, LeakyRelu -> Elu -> Softplus, Squeeze and Unsqueeze around a
symbolic batch, a Mean of three operands, Slice with negative and clamped
bounds and steps, Split, Pad (a constant value, reflect), a ceil_mode
window the loader must refuse, shape computations the loader folds
(PyTorch's exports of a channel shuffle, x.view(x.size(0), -1), indexing
and arange with a symbolic batch; batch arithmetic in a fixed-shape
graph; Equal / Where / ConstantOfShape / Expand), Gather of computed
tensors, a Concat of 20 inputs, batch-first self-attention (MatMul of
two computed tensors with a symbolic batch), constants concatenated around
a computed tensor, a tiny ViT exported with fixed shapes, and Pow by a
constant 2 (run as a multiply) and 3, and layer norms (as opset 13 writes
them out, fused back into one at load; channels-last as ConvNeXt's; read
twice; LayerNormalization of opset 17). Expected outputs come from PyTorch
and numpy.

    /usr/bin/python3 tests/data/onnx/make_cases.py     (python3-onnx, python3-torch)

build/onnx-suite --root tests/data/onnx cases runs them; so does make test.
"""
import os

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")
rng = np.random.default_rng(0)
def save(name, nodes, inputs, outputs, inits, feeds, expect, opset=13):
    g=helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, TP.FLOAT, s) for n,s in inputs],
        [helper.make_tensor_value_info(n, TP.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(v.astype(np.float32) if v.dtype!=np.int64 else v, k) for k,v in inits.items()])
    m=helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)]); m.ir_version=7
    d=os.path.join(root,name,'test_data_set_0'); os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(root,name,'model.onnx'))
    for i,(k,v) in enumerate(feeds.items()):
        open(os.path.join(d,f'input_{i}.pb'),'wb').write(numpy_helper.from_array(v.astype(np.float32),k).SerializeToString())
    for i,v in enumerate(expect):
        open(os.path.join(d,f'output_{i}.pb'),'wb').write(numpy_helper.from_array(np.asarray(v,np.float32),outputs[i]).SerializeToString())
r=lambda *s: rng.standard_normal(s).astype(np.float32)
t=torch.from_numpy
# (a) softmax opset 11 axis 2 on [N,3,4,5]
x=r(2,3,4,5); e=F.softmax(t(x).reshape(2,3,20),dim=2).reshape(2,3,4,5).numpy()
save('softmax11_axis2',[helper.make_node('Softmax',['x'],['y'],axis=2)],[('x',['N',3,4,5])],['y'],{}, {'x':x},[e],opset=11)
# (b) reshape [0,-1] and [-1, 20]
x=r(3,4,5)
save('reshape_0_m1',[helper.make_node('Reshape',['x','s'],['y'])],[('x',['N',4,5])],['y'],{'s':np.array([0,-1],np.int64)},{'x':x},[x.reshape(3,20)])
save('reshape_m1_20',[helper.make_node('Reshape',['x','s'],['y'])],[('x',['N',4,5])],['y'],{'s':np.array([-1,2,10],np.int64)},{'x':x},[x.reshape(3,2,10)])
# (c) gemm alpha beta
a=r(4,6); B=r(6,3); C=r(1,3)
save('gemm_ab',[helper.make_node('Gemm',['a','B','C'],['y'],alpha=2.0,beta=0.5)],[('a',['N',6])],['y'],{'B':B,'C':C},{'a':a},[2*a@B+0.5*C])
Bt=r(3,6)
save('gemm_transB_scalarC',[helper.make_node('Gemm',['a','B','C'],['y'],transB=1,beta=3.0)],[('a',['N',6])],['y'],{'B':Bt,'C':np.array(0.25,np.float32)},{'a':a},[a@Bt.T+0.75])
# gemm with a per-row C in a fixed-batch model -> whole mode
Cm=r(4,3)
save('gemm_rowC',[helper.make_node('Gemm',['a','B','C'],['y'])],[('a',[4,6])],['y'],{'B':B,'C':Cm},{'a':a},[a@B+Cm])
# (d) matmul rank3
A=r(2,4,6)
save('matmul_rank3',[helper.make_node('MatMul',['a','B'],['y'])],[('a',['N',4,6])],['y'],{'B':B},{'a':A},[A@B])
bv=r(6); save('matmul_vecB',[helper.make_node('MatMul',['a','b'],['y'])],[('a',['N',4,6])],['y'],{'b':bv},{'a':A},[A@bv])
# (e) avgpool asym pads no count_include_pad, ceil
x=r(2,3,7,8)
def avgpool_ref(x,k,s,pads,cip,ceil):
    N,C,H,W=x.shape; pt,pl,pb,pr=pads
    def outd(i,k,s,p0,p1):
        v=(i+p0+p1-k)/s+1
        return int(np.ceil(v)) if ceil else int(np.floor(v))
    OH=outd(H,k[0],s[0],pt,pb); OW=outd(W,k[1],s[1],pl,pr)
    y=np.zeros((N,C,OH,OW),np.float64)
    for oh in range(OH):
        for ow in range(OW):
            h0=oh*s[0]-pt; w0=ow*s[1]-pl; h1=min(h0+k[0],H+pb); w1=min(w0+k[1],W+pr)
            cnt=(h1-h0)*(w1-w0)
            hh0,ww0,hh1,ww1=max(h0,0),max(w0,0),min(h1,H),min(w1,W)
            sm=x[:,:,hh0:hh1,ww0:ww1].sum(axis=(2,3))
            with np.errstate(invalid="ignore"):   # a window wholly in padding: refused by the loader
                y[:,:,oh,ow]=sm/(cnt if cip else (hh1-hh0)*(ww1-ww0))
    return y
save('avgpool_asym',[helper.make_node('AveragePool',['x'],['y'],kernel_shape=[3,3],strides=[2,2],pads=[1,0,0,2])],[('x',['N',3,7,8])],['y'],{},{'x':x},[avgpool_ref(x,(3,3),(2,2),(1,0,0,2),0,False)])
save('avgpool_asym_ceil',[helper.make_node('AveragePool',['x'],['y'],kernel_shape=[3,2],strides=[2,3],pads=[0,1,1,0],ceil_mode=1)],[('x',['N',3,7,8])],['y'],{},{'x':x},[avgpool_ref(x,(3,2),(2,3),(0,1,1,0),0,True)])
save('avgpool_asym_cip_ok',[helper.make_node('AveragePool',['x'],['y'],kernel_shape=[3,3],strides=[2,2],pads=[1,1,1,1],count_include_pad=1)],[('x',['N',3,7,8])],['y'],{},{'x':x},[avgpool_ref(x,(3,3),(2,2),(1,1,1,1),1,False)])
# (f) conv1d same_lower dilation stride group
x=r(2,4,11); w=r(6,2,3); b=r(6)
# SAME_LOWER: out=ceil(11/2)=6, eff=5, total=(6-1)*2+5-11=4 -> begin 2 end 2
e=F.conv1d(t(x),t(w),t(b),stride=2,dilation=2,groups=2,padding=2).numpy()
save('conv1d_same_lower',[helper.make_node('Conv',['x','w','b'],['y'],auto_pad='SAME_LOWER',strides=[2],dilations=[2],group=2)],[('x',['N',4,11])],['y'],{'w':w,'b':b},{'x':x},[e])
# conv2d same_upper odd total: in 6 stride 1 k 2 -> total 1 -> begin 0 end 1
x=r(2,3,6,5); w=r(4,3,2,2)
xp=np.pad(x,((0,0),(0,0),(0,1),(0,1)))
e=F.conv2d(t(xp),t(w)).numpy()
save('conv2d_same_upper',[helper.make_node('Conv',['x','w'],['y'],auto_pad='SAME_UPPER')],[('x',['N',3,6,5])],['y'],{'w':w},{'x':x},[e])
xp=np.pad(x,((0,0),(0,0),(1,0),(1,0)))
save('conv2d_same_lower_relu',[helper.make_node('Conv',['x','w'],['c'],auto_pad='SAME_LOWER'),helper.make_node('Relu',['c'],['y'])],[('x',['N',3,6,5])],['y'],{'w':w},{'x':x},[np.maximum(F.conv2d(t(xp),t(w)).numpy(),0)])
# (g) standalone BN + conv->BN fold + residual add
x=r(2,3,5,5); sc=r(3); bb=r(3); mu=r(3); var=np.abs(r(3))+0.1
bn=lambda z: (z-mu[None,:,None,None])/np.sqrt(var[None,:,None,None]+1e-3)*sc[None,:,None,None]+bb[None,:,None,None]
save('bn_standalone',[helper.make_node('BatchNormalization',['x','s','b','m','v'],['y'],epsilon=1e-3)],[('x',['N',3,5,5])],['y'],{'s':sc,'b':bb,'m':mu,'v':var},{'x':x},[bn(x)])
w=r(3,3,3,3)
c=F.conv2d(t(x),t(w),padding=1).numpy()
save('conv_bn_add_relu',[helper.make_node('Conv',['x','w'],['c'],pads=[1,1,1,1]),helper.make_node('BatchNormalization',['c','s','b','m','v'],['n'],epsilon=1e-3),helper.make_node('Add',['n','x'],['a']),helper.make_node('Relu',['a'],['y'])],[('x',['N',3,5,5])],['y'],{'w':w,'s':sc,'b':bb,'m':mu,'v':var},{'x':x},[np.maximum(bn(c)+x,0)])
# (h) flatten axis 2 with dim1 == 1
x=r(3,1,4,5)
save('flatten_axis2_ones',[helper.make_node('Flatten',['x'],['y'],axis=2)],[('x',['N',1,4,5])],['y'],{},{'x':x},[x.reshape(3,20)])
# (i) clip opset 6 relu6 and general
x=r(3,4)*5
save('clip6_relu6',[helper.make_node('Clip',['x'],['y'],min=0.0,max=6.0)],[('x',['N',4])],['y'],{},{'x':x},[np.clip(x,0,6)],opset=6)
save('clip13_const',[helper.make_node('Clip',['x','lo',''],['y'])],[('x',['N',4])],['y'],{'lo':np.array(-1.5,np.float32)},{'x':x},[np.maximum(x,-1.5)])
# (j) sub const left, div, mul broadcast with const [1,4]
x=r(3,4); k=r(1,4); k2=r(4)
save('sub_const_left',[helper.make_node('Sub',['k','x'],['y'])],[('x',['N',4])],['y'],{'k':k},{'x':x},[k-x])
save('div_mul',[helper.make_node('Div',['x','k2'],['d']),helper.make_node('Mul',['d','x'],['y'])],[('x',['N',4])],['y'],{'k2':k2},{'x':x},[(x/k2)*x])
# legacy broadcast add opset 6 with axis
x=r(2,3,4,5); k=r(3,4)
save('add6_axis1',[helper.make_node('Add',['x','k'],['y'],broadcast=1,axis=1)],[('x',['N',3,4,5])],['y'],{'k':k},{'x':x},[x+k[None,:,:,None]],opset=6)
# maxpool 1d with dilation & pads, ceil
x=r(2,3,17)
e=F.max_pool1d(t(x),kernel_size=3,stride=2,padding=1,dilation=2,ceil_mode=False).numpy()
save('maxpool1d_dil',[helper.make_node('MaxPool',['x'],['y'],kernel_shape=[3],strides=[2],pads=[1,1],dilations=[2])],[('x',['N',3,17])],['y'],{},{'x':x},[e])
# global avg pool 3d input [N,C,L]
x=r(2,3,7)
save('gap_1d',[helper.make_node('GlobalAveragePool',['x'],['y'])],[('x',['N',3,7])],['y'],{},{'x':x},[x.mean(axis=2,keepdims=True)])
# two inputs, concat axis 1, softmax13 axis 1
x1=r(2,3); x2=r(2,5)
e=F.softmax(t(np.concatenate([x1,x2],1)),dim=1).numpy()
save('concat_softmax',[helper.make_node('Concat',['a','b'],['c'],axis=1),helper.make_node('Softmax',['c'],['y'],axis=1)],[('a',['N',3]),('b',['N',5])],['y'],{},{'a':x1,'b':x2},[e])
# identity output of an input & two outputs
x=r(2,3)
save('two_outputs',[helper.make_node('Identity',['x'],['y']),helper.make_node('Relu',['x'],['z'])],[('x',['N',3])],['y','z'],{},{'x':x},[x,np.maximum(x,0)])
# PRelu per channel (slope [C,1,1]) and a chain of ONNX-only functions, PyTorch as the oracle
x=r(3,4,5,6); w=np.abs(r(4))*0.5
save('prelu_channels',[helper.make_node('PRelu',['x','w'],['y'])],[('x',['N',4,5,6])],['y'],{'w':w.reshape(4,1,1)},{'x':x},[F.prelu(t(x),t(w)).numpy()])
x=r(3,8)*3
e=F.softplus(F.elu(F.leaky_relu(t(x),0.2),alpha=0.7)).numpy()
save('leaky_elu_softplus',[helper.make_node('LeakyRelu',['x'],['a'],alpha=0.2),helper.make_node('Elu',['a'],['b'],alpha=0.7),
    helper.make_node('Softplus',['b'],['y'])],[('x',['N',8])],['y'],{},{'x':x},[e])
# Squeeze and Unsqueeze with axes as inputs (opset 13), batch kept symbolic
x=r(2,3,1,5)
save('squeeze_unsqueeze',[helper.make_node('Squeeze',['x','sa'],['s']),helper.make_node('Unsqueeze',['s','ua'],['y'])],
    [('x',['N',3,1,5])],['y'],{'sa':np.array([-2],np.int64),'ua':np.array([1,4],np.int64)},{'x':x},[x.reshape(2,1,3,5,1)])
# Mean of three operands (one a constant row), then Abs and Sqrt
x=r(3,4); k=r(4)
save('mean3_abs_sqrt',[helper.make_node('Relu',['x'],['r']),helper.make_node('Mean',['x','r','k'],['m']),
    helper.make_node('Abs',['m'],['a']),helper.make_node('Sqrt',['a'],['y'])],[('x',['N',4])],['y'],{'k':k},{'x':x},
    [np.sqrt(np.abs((x+np.maximum(x,0)+k)/3))])
# Slice with negative and clamped bounds and steps (constant inputs), Slice from attributes, Split
x=r(2,6,7)
save('slice_steps',[helper.make_node('Slice',['x','st','en','ax','sp'],['y'])],[('x',['N',6,7])],['y'],
    {'st':np.array([1,-1],np.int64),'en':np.array([5,-100],np.int64),'ax':np.array([1,-1],np.int64),'sp':np.array([2,-2],np.int64)},
    {'x':x},[x[:,1:5:2,-1:-100:-2]])
x=r(2,3,6)
save('slice9_attrs',[helper.make_node('Slice',['x'],['y'],starts=[0,2],ends=[2**62,5],axes=[0,2])],[('x',['N',3,6])],['y'],{},
    {'x':x},[x[:,:,2:5]],opset=9)
x=r(2,5,4)
save('split_parts',[helper.make_node('Split',['x','sp'],['a','b'],axis=1)],[('x',['N',5,4])],['a','b'],{'sp':np.array([2,3],np.int64)},
    {'x':x},[x[:,:2],x[:,2:]])
save('split11_equal',[helper.make_node('Split',['x'],['a','b'],axis=-1)],[('x',['N',5,4])],['a','b'],{},
    {'x':x},[x[:,:,:2],x[:,:,2:]],opset=11)
# Pad from constant inputs (opset 13): a constant value, and reflect, around a symbolic batch
x=r(2,3,4,5)
save('pad13_constant',[helper.make_node('Pad',['x','p','v'],['y'])],[('x',['N',3,4,5])],['y'],
    {'p':np.array([0,1,0,2,0,0,3,1],np.int64),'v':np.array(1.5,np.float32)},{'x':x},
    [np.pad(x,((0,0),(1,0),(0,3),(2,1)),constant_values=1.5)])
save('pad13_reflect',[helper.make_node('Pad',['x','p'],['y'],mode='reflect')],[('x',['N',3,4,5])],['y'],
    {'p':np.array([0,0,3,2,0,0,1,4],np.int64)},{'x':x},[np.pad(x,((0,0),(0,0),(3,1),(2,4)),mode='reflect')])
# PyTorch exports (opset 13, batch symbolic) whose shapes are computed at run time: Shape, Gather, Div, Cast,
# Unsqueeze, Concat, Range feeding Reshape and arithmetic
def export(name, module, xs, outputs=('y',), dynamic=True, opset=13):
    d=os.path.join(root,name,'test_data_set_0'); os.makedirs(d, exist_ok=True)
    names=[f'x{i}' for i in range(len(xs))]
    with torch.no_grad():
        ys=module(*[t(x) for x in xs])
    ys=ys if isinstance(ys,tuple) else (ys,)
    torch.onnx.export(module, tuple(t(x) for x in xs), os.path.join(root,name,'model.onnx'), input_names=names,
                      output_names=list(outputs), opset_version=opset,
                      dynamic_axes={n:{0:'N'} for n in names+list(outputs)} if dynamic else None)
    for i,x in enumerate(xs):
        open(os.path.join(d,f'input_{i}.pb'),'wb').write(numpy_helper.from_array(x,names[i]).SerializeToString())
    for i,y in enumerate(ys):
        open(os.path.join(d,f'output_{i}.pb'),'wb').write(numpy_helper.from_array(y.numpy(),outputs[i]).SerializeToString())
class Shuffle(torch.nn.Module):   # torchvision's ShuffleNetV2 channel_shuffle after a 1x1 conv
    def __init__(s): super().__init__(); torch.manual_seed(0); s.conv=torch.nn.Conv2d(8,8,1)
    def forward(s, x):
        x=s.conv(x); b,c,h,w=x.size()
        return torch.transpose(x.view(b,2,c//2,h,w),1,2).contiguous().view(b,-1,h,w)
export('fold_channel_shuffle', Shuffle().eval(), [r(2,8,5,5)])
class ViewFlat(torch.nn.Module):
    def forward(s, x): return torch.relu(x).view(x.size(0), -1)
export('fold_view_batch', ViewFlat(), [r(3,4,5)])
class Index(torch.nn.Module):     # Gather of a computed tensor: a scalar index and an evenly stepping list
    def forward(s, x): return x[:, 1] * 2, x[:, [4, 2, 0]]
export('gather_computed', Index(), [r(2,6,3)], outputs=('y','z'))
class Arange(torch.nn.Module):
    def forward(s, x): return x + torch.arange(x.shape[1], dtype=torch.float32).view(1, -1, 1) * 0.5
export('fold_arange', Arange(), [r(2,4,3)])
# batch arithmetic in a fixed-shape graph: batch mode refuses it, whole mode folds it (x.reshape(x.shape[0]*3, 4))
x=r(2,3,4)
save('fold_batch_whole',[helper.make_node('Shape',['x'],['s']),helper.make_node('Gather',['s','zero'],['n']),
    helper.make_node('Mul',['n','three'],['n3']),helper.make_node('Unsqueeze',['n3','ax0'],['u']),
    helper.make_node('Concat',['u','four'],['shape'],axis=0),helper.make_node('Reshape',['x','shape'],['y'])],
    [('x',[2,3,4])],['y'],{'zero':np.array(0,np.int64),'three':np.array(3,np.int64),'ax0':np.array([0],np.int64),
    'four':np.array([4],np.int64)},{'x':x},[x.reshape(6,4)])
# Equal / Where / ConstantOfShape around the batch size (expand(-1, ...) in exports), a constant Expand
x=r(3,4); k=r(4)
save('fold_where_expand',[helper.make_node('Shape',['x'],['s']),helper.make_node('Equal',['s','m1'],['eq']),
    helper.make_node('Shape',['s'],['ss']),
    helper.make_node('ConstantOfShape',['ss'],['ones'],value=numpy_helper.from_array(np.array([1],np.int64))),
    helper.make_node('Where',['eq','ones','s'],['w']),helper.make_node('Reshape',['x','w'],['xr']),
    helper.make_node('Expand',['k','e'],['ke']),helper.make_node('Mul',['xr','ke'],['y'])],
    [('x',['N',4])],['y'],{'m1':np.array([-1],np.int64),'k':k,'e':np.array([1,4],np.int64)},{'x':x},[x*k])
# float arithmetic, a stepped Slice and Casts (truncation toward zero) on constants only, then on x
x=r(2,4); k1=r(4); k2=np.array([2,-4,0.5,8],np.float32); k3=r(8); k4=np.array([2.7,-2.7,0.2,-5],np.float32)
save('fold_const_math',[helper.make_node('Div',['k1','k2'],['q']),
    helper.make_node('Slice',['k3','st','en','ax','sp'],['sl']),
    helper.make_node('Cast',['k4'],['ki'],to=TP.INT64),helper.make_node('Cast',['ki'],['kf'],to=TP.FLOAT),
    helper.make_node('Mul',['x','q'],['xq']),helper.make_node('Add',['xq','sl'],['a']),helper.make_node('Add',['a','kf'],['y'])],
    [('x',['N',4])],['y'],{'k1':k1,'k2':k2,'k3':k3,'k4':k4,'st':np.array([1],np.int64),'en':np.array([8],np.int64),
    'ax':np.array([0],np.int64),'sp':np.array([2],np.int64)},{'x':x},[x*(k1/k2)+k3[1::2]+np.trunc(k4)])
# Concat of 20 inputs (DenseNet's later layers: more than one runtime concat takes)
x=r(2,3,2)
save('concat_20',[helper.make_node('Relu',['x'],['rx']),helper.make_node('Concat',['x','rx']*10,['y'],axis=1)],
    [('x',['N',3,2])],['y'],{},{'x':x},[np.concatenate([x,np.maximum(x,0)]*10,axis=1)])
class Attention(torch.nn.Module):   # batch-first self-attention with two heads: MatMul of two computed tensors
    def __init__(s): super().__init__(); torch.manual_seed(0); s.qkv=torch.nn.Linear(8,24); s.out=torch.nn.Linear(8,8)
    def forward(s, x):
        n,t,_=x.shape
        q,k,v=[y.reshape(n,t,2,4).permute(0,2,1,3) for y in s.qkv(x).split(8,dim=-1)]
        a=torch.softmax(torch.matmul(q,k.transpose(-1,-2))/2.0,dim=-1)
        return s.out(torch.matmul(a,v).permute(0,2,1,3).reshape(n,t,8))
export('attention_batch_first', Attention().eval(), [r(2,5,8)])
# constants concatenated before and after a computed tensor (a fixed batch of 1), and a tiny ViT exported with
# fixed shapes: its class token (a constant) joins the patches, its attention runs whole
x=r(1,2,3); k1=r(1,1,3); k2=r(1,2,3)
save('concat_constants_around',[helper.make_node('Relu',['x'],['rx']),helper.make_node('Concat',['k1','rx','x','k2'],['y'],axis=1)],
    [('x',[1,2,3])],['y'],{'k1':k1,'k2':k2},{'x':x},[np.concatenate([k1,np.maximum(x,0),x,k2],axis=1)])
from torchvision.models.vision_transformer import VisionTransformer
torch.manual_seed(0)
export('vit_tiny_fixed', VisionTransformer(image_size=16, patch_size=8, num_layers=1, num_heads=2, hidden_dim=16,
       mlp_dim=32, num_classes=5).eval(), [r(1,3,16,16)], dynamic=False)
# Pow by a constant 2 (runs as x * x) and by 3, as exported LayerNorms use it
x=(r(2,5)*20).astype(np.float32)
save('pow_square_cube',[helper.make_node('Pow',['x','two'],['sq']),helper.make_node('Pow',['x','three'],['cu']),
    helper.make_node('Add',['sq','cu'],['y'])],[('x',['N',5])],['y'],{'two':np.array(2,np.float32),'three':np.array([3],np.float32)},
    {'x':x},[x*x+x**3])
# F.interpolate as exported: nearest by a scale of 2 (scales constant), bilinear to a size taken from the input
# (sizes from Shape: the batch size stands for itself), bicubic with align_corners, linear on [N, C, L]
class Interp(torch.nn.Module):
    def __init__(s, **kw): super().__init__(); s.kw=kw
    def forward(s, x): return torch.nn.functional.interpolate(torch.relu(x), **s.kw)
export('resize_nearest_scale2', Interp(scale_factor=2, mode='nearest').eval(), [r(2,3,4,5)])
class InterpLike(torch.nn.Module):
    def forward(s, x): return torch.nn.functional.interpolate(x[:, :, ::2, ::2], size=x.shape[-2:], mode='bilinear',
                                                             align_corners=False)
export('resize_bilinear_to_input_size', InterpLike().eval(), [r(2,3,7,6)])
export('resize_bicubic_align_corners', Interp(size=(5,9), mode='bicubic', align_corners=True).eval(), [r(2,2,4,4)])
export('resize_linear_1d', Interp(scale_factor=1.5, mode='linear').eval(), [r(2,3,6)])
# ConvTranspose as PyTorch exports it: stride 2 with output_padding, 1-D with groups and dilation, and a U-Net
# step (a strided conv down, a transposed conv up, the skip concatenated, a conv)
torch.manual_seed(0)
export('conv_transpose2d_output_padding', torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1,
       output_padding=1).eval(), [r(2,4,5,6)])
export('conv_transpose1d_groups_dilation', torch.nn.ConvTranspose1d(4, 6, 3, stride=1, padding=2, groups=2,
       dilation=2, bias=False).eval(), [r(2,4,7)])
class UNetStep(torch.nn.Module):
    def __init__(s):
        super().__init__(); torch.manual_seed(0)
        s.down=torch.nn.Conv2d(3,8,3,stride=2,padding=1); s.up=torch.nn.ConvTranspose2d(8,4,2,stride=2)
        s.out=torch.nn.Conv2d(7,2,3,padding=1)
    def forward(s, x): return s.out(torch.cat([torch.relu(s.up(torch.relu(s.down(x)))), x], dim=1))
export('unet_step', UNetStep().eval(), [r(2,3,8,8)])
# DeepLab's atrous convolutions at rates past the map (their outer taps read only padding: trimmed at load to the
# taps that read the input) and at a rate reaching part of it; nn.Hardswish after a conv, which opset 13 exports
# as HardSigmoid and Mul (fused back into one activation at load)
class Atrous(torch.nn.Module):
    def __init__(s):
        super().__init__(); torch.manual_seed(0)
        s.far=torch.nn.Conv2d(4,5,3,padding=6,dilation=6); s.mid=torch.nn.Conv2d(4,5,3,padding=3,dilation=3)
        s.wide=torch.nn.Conv2d(4,5,(3,5),padding=(1,8),dilation=(1,4))
    def forward(s, x): return s.far(x) + s.mid(x) + s.wide(x)
export('conv_atrous_past_the_map', Atrous().eval(), [r(2,4,5,5)])
torch.manual_seed(0)
export('hardswish_exported', torch.nn.Sequential(torch.nn.Conv2d(3,4,3,padding=1), torch.nn.Hardswish()).eval(),
       [(r(2,3,5,5)*4).astype(np.float32)])
# torch's Linear on 3-D input (MatMul, then Add of the bias: folded into the linear) and its exact GELU (Div, Erf,
# Add, Mul, Mul: one gelu at load, fused into the linear); and a product read twice, whose Add must stay an Add
torch.manual_seed(0)
export('linear_gelu_exported', torch.nn.Sequential(torch.nn.Linear(8,16), torch.nn.GELU(), torch.nn.Linear(16,4)).eval(),
       [r(2,5,8)])
class SharedProduct(torch.nn.Module):
    def __init__(s): super().__init__(); torch.manual_seed(0); s.w=torch.nn.Parameter(torch.randn(8,6)); s.b=torch.nn.Parameter(torch.randn(6))
    def forward(s, x):
        h=torch.matmul(x, s.w)
        return (h + s.b) * h
export('linear_product_read_twice', SharedProduct().eval(), [r(2,3,8)])
# SiLU after a conv (Sigmoid and Mul: one silu at load) and a squeeze-excitation gate, the sigmoid of another
# tensor, whose Mul must stay a Mul (EfficientNet's block)
class SiluGate(torch.nn.Module):
    def __init__(s):
        super().__init__(); torch.manual_seed(0)
        s.conv=torch.nn.Conv2d(3,6,3,padding=1); s.squeeze=torch.nn.Conv2d(6,6,1)
    def forward(s, x):
        y=torch.nn.functional.silu(s.conv(x))
        return y * torch.sigmoid(s.squeeze(y.mean((2,3), keepdim=True)))
export('silu_and_gate', SiluGate().eval(), [(r(2,3,6,6)*4).astype(np.float32)])
# LayerNorm as opset 13 writes it out (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add: one layer_norm
# at load with its scale and bias), after a Linear and channels-last between permutes as ConvNeXt's (values far
# from 0); a normalised tensor read twice, whose Mul must stay a Mul; and opset 17's LayerNormalization
torch.manual_seed(0)
export('layer_norm_exported', torch.nn.Sequential(torch.nn.Linear(8,16), torch.nn.LayerNorm(16), torch.nn.GELU()).eval(),
       [r(2,5,8)])
class LayerNorm2d(torch.nn.Module):
    def __init__(s):
        super().__init__(); torch.manual_seed(0)
        s.conv=torch.nn.Conv2d(3,6,3,padding=1); s.norm=torch.nn.LayerNorm(6, eps=1e-6)
        with torch.no_grad(): s.norm.weight.uniform_(0.5,2); s.norm.bias.uniform_(-1,1)
    def forward(s, x): return s.norm(s.conv(x).permute(0,2,3,1) + 50).permute(0,3,1,2)
export('layer_norm_channels_last', LayerNorm2d().eval(), [r(2,3,5,5)])
class NormReadTwice(torch.nn.Module):
    def __init__(s): super().__init__(); torch.manual_seed(0); s.w=torch.nn.Parameter(torch.randn(8))
    def forward(s, x):
        n=F.layer_norm(x, (8,))
        return n * s.w + n
export('layer_norm_read_twice', NormReadTwice().eval(), [r(2,3,8)])
torch.manual_seed(0)
export('layer_norm_opset17', torch.nn.Sequential(torch.nn.Linear(8,12), torch.nn.LayerNorm(12)).eval(), [r(2,4,8)],
       opset=17)
print(f'wrote {root}')
